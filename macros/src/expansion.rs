//! `WIRECALL_EXPAND`: prints a service's expansion to stderr while compiling, so the generated
//! code can be read without extra tools.
//!
//! The code is laid out by `prettyplease` (the formatter `cargo expand` uses too); when the
//! tokens are not a Rust file prettyplease can print, the raw tokens are printed instead, so
//! asking for the expansion never makes the macro fail.

use proc_macro2::TokenStream;
use syn::visit::{self, Visit};

/// Prints `tokens` when `WIRECALL_EXPAND` is `1` (every service) or the trait's name.
pub fn print_if_requested(trait_name: &str, tokens: &TokenStream) {
    let Some(wanted) = std::env::var_os("WIRECALL_EXPAND") else {
        return;
    };
    let wanted = wanted.to_string_lossy();
    if wanted != "1" && wanted != trait_name {
        return;
    }
    eprintln!(
        "// ---- #[wirecall::service] expansion of `{trait_name}` ----\n{}",
        format_expansion(tokens)
    );
}

/// `tokens` as formatted Rust source, or as one line of raw tokens when they do not parse as a
/// file or hold syntax that syn keeps only as raw tokens (prettyplease panics on some of it).
pub fn format_expansion(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) if !has_verbatim(&file) => prettyplease::unparse(&file),
        _ => tokens.to_string(),
    }
}

/// Whether `file` holds a `Verbatim` node: syntax syn parsed without a model for it.
fn has_verbatim(file: &syn::File) -> bool {
    let mut finder = VerbatimFinder::default();
    finder.visit_file(file);
    finder.found
}

#[derive(Default)]
struct VerbatimFinder {
    found: bool,
}

impl<'ast> Visit<'ast> for VerbatimFinder {
    fn visit_item(&mut self, node: &'ast syn::Item) {
        self.found |= matches!(node, syn::Item::Verbatim(_));
        visit::visit_item(self, node);
    }
    fn visit_foreign_item(&mut self, node: &'ast syn::ForeignItem) {
        self.found |= matches!(node, syn::ForeignItem::Verbatim(_));
        visit::visit_foreign_item(self, node);
    }
    fn visit_trait_item(&mut self, node: &'ast syn::TraitItem) {
        self.found |= matches!(node, syn::TraitItem::Verbatim(_));
        visit::visit_trait_item(self, node);
    }
    fn visit_impl_item(&mut self, node: &'ast syn::ImplItem) {
        self.found |= matches!(node, syn::ImplItem::Verbatim(_));
        visit::visit_impl_item(self, node);
    }
    fn visit_expr(&mut self, node: &'ast syn::Expr) {
        self.found |= matches!(node, syn::Expr::Verbatim(_));
        visit::visit_expr(self, node);
    }
    fn visit_pat(&mut self, node: &'ast syn::Pat) {
        self.found |= matches!(node, syn::Pat::Verbatim(_));
        visit::visit_pat(self, node);
    }
    fn visit_type(&mut self, node: &'ast syn::Type) {
        self.found |= matches!(node, syn::Type::Verbatim(_));
        visit::visit_type(self, node);
    }
    fn visit_type_param_bound(&mut self, node: &'ast syn::TypeParamBound) {
        self.found |= matches!(node, syn::TypeParamBound::Verbatim(_));
        visit::visit_type_param_bound(self, node);
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::format_expansion;

    #[test]
    fn an_expansion_is_printed_one_item_per_line_with_four_space_indents() {
        let text = format_expansion(&quote! {
            #[allow(dead_code)] const _: () = { impl ::wirecall::Service for Users { fn descriptor(&self) -> u8 { 1 } } };
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "#[allow(dead_code)]",
                "const _: () = {",
                "    impl ::wirecall::Service for Users {",
                "        fn descriptor(&self) -> u8 {",
                "            1",
                "        }",
                "    }",
                "};",
            ],
            "{text}"
        );
    }

    #[test]
    fn a_real_service_expansion_is_formatted() {
        let tokens = crate::service::expand(
            proc_macro2::TokenStream::new(),
            quote! {
                pub trait UserService {
                    async fn get_user(&self, id: u64) -> Result<String, String>;
                }
            },
        )
        .expect("expands");
        let text = format_expansion(&tokens);
        for line in [
            "pub trait UserService: ::core::marker::Send + ::core::marker::Sync + 'static {",
            "    fn get_user(",
            "pub struct UserServiceClient {",
            "    channel: ::wirecall::Channel,",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line `{line}` in {text}"
            );
        }
        assert!(
            !text.contains(" :: "),
            "raw tokens, not formatted code: {text}"
        );
    }

    #[test]
    fn tokens_prettyplease_cannot_print_come_back_raw() {
        // Not a file at all.
        assert_eq!(format_expansion(&quote!(1 + 2)), "1 + 2");
        // A file, but syn keeps `dyn* T` as raw tokens and prettyplease panics on it.
        let verbatim = quote!(struct S { a: dyn* T });
        assert_eq!(format_expansion(&verbatim), verbatim.to_string());
    }
}
