//! `crate = "..."`: the path generated code names wirecall by, for a dependency renamed in
//! `Cargo.toml` (`rpc = { package = "wirecall", .. }`) or re-exported from another crate.
//!
//! Generated code starts every path to wirecall with this root (`::wirecall` by default), as
//! serde's `#[serde(crate = "...")]` does.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::{LitStr, Path, PathArguments};

/// The root of every path to wirecall in generated code.
#[derive(Clone)]
pub struct CratePath(Path);

impl Default for CratePath {
    fn default() -> Self {
        CratePath(syn::parse_quote!(::wirecall))
    }
}

impl CratePath {
    /// Reads the value of `crate = "..."`: a plain path (`"rpc"`, `"::rpc"`,
    /// `"reexports::wirecall"`); errors point at the string.
    pub fn from_lit(lit: &LitStr) -> syn::Result<Self> {
        let hint = "write the name wirecall has in this crate's Cargo.toml, e.g. \
                    `crate = \"rpc\"`, or a path to a re-export, e.g. `crate = \"deps::wirecall\"`";
        // `parse` gives every token the string's span, so a wrong path is reported there.
        let path: Path = lit.parse().map_err(|_| {
            syn::Error::new_spanned(lit, format!("\"{}\" is not a path; {hint}", lit.value()))
        })?;
        if path
            .segments
            .iter()
            .any(|segment| !matches!(segment.arguments, PathArguments::None))
        {
            return Err(syn::Error::new_spanned(
                lit,
                format!("the crate path takes no generic arguments; {hint}"),
            ));
        }
        Ok(CratePath(path))
    }

    /// The path as the string serde's `#[serde(crate = "...")]` and `#[serde(with = "...")]`
    /// expect, followed by `suffix` (e.g. `"::__private::serde"`).
    pub fn string_with(&self, suffix: &str) -> LitStr {
        let path = &self.0;
        let mut text = quote!(#path).to_string().replace(' ', "");
        text.push_str(suffix);
        LitStr::new(&text, proc_macro2::Span::call_site())
    }
}

impl CratePath {
    /// The path with every token at `span`: the start of a generated path whose errors should
    /// be reported where `span` is (rustc reports a path expression at its first token).
    pub fn at(&self, span: Span) -> TokenStream {
        let path = &self.0;
        respan(quote!(#path), span)
    }
}

/// `tokens` with every token, nested ones too, at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

impl ToTokens for CratePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}

/// Parses `= "path"` after the key `crate` of an attribute's arguments.
pub fn parse_value(input: syn::parse::ParseStream, key: &syn::Ident) -> syn::Result<CratePath> {
    input.parse::<syn::Token![=]>()?;
    let value: syn::Expr = input.parse()?;
    match &value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => CratePath::from_lit(lit),
        _ => Err(syn::Error::new_spanned(
            &value,
            format!(
                "`{key}` takes the path in a string, e.g. `crate = \"rpc\"` when wirecall is \
                 renamed `rpc` in Cargo.toml"
            ),
        )),
    }
}
