//! `#[wirecall::message]`: makes a struct with named fields, or an enum, encodable by every
//! codec. Parse, validate, generate, like `#[service]`; on failure, the user's item plus the
//! errors.
//!
//! - `parse.rs`: the arguments, and the item into a [`parse::MessageDef`] that records every
//!   attribute the macro reads;
//! - `validate.rs`: the rules for the item, its fields and variants and their attributes;
//! - `codegen.rs`: the item with its derives, and the impls of `codegen::proto_impls` and
//!   `codegen::reflect`, shared with the service's generated messages.

mod codegen;
mod parse;
mod validate;

use proc_macro2::TokenStream;
use quote::quote;
use syn::Item;

use crate::crate_path::CratePath;
use crate::errors::Errors;
use parse::{MessageArgs, MessageDef};

/// Expands `#[message(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let item: Item = syn::parse2(item)?;
    let mut errors = Errors::default();
    let krate = match syn::parse2::<MessageArgs>(args) {
        Ok(args) => args.krate.unwrap_or_default(),
        Err(error) => {
            errors.push(error);
            CratePath::default()
        }
    };
    let def = parse::parse_message(krate, item)?;
    if let Err(error) = validate::validate(&def) {
        errors.push(error);
    }
    if let Err(error) = errors.finish() {
        return Ok(fallback(&def, error));
    }
    codegen::expand(&def).or_else(|error| Ok(fallback(&def, error)))
}

/// The user's item as written (minus the attributes only the macro reads) followed by the
/// errors: the type stays defined, so its uses add no errors and ours stay the first ones.
fn fallback(def: &MessageDef, error: syn::Error) -> TokenStream {
    let item = def.fallback_item();
    let error = error.into_compile_error();
    quote! {
        #item
        #error
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    fn errors(item: TokenStream) -> Vec<String> {
        let expansion = super::expand(TokenStream::new(), item).expect("expands");
        let text = expansion.to_string();
        text.split("compile_error !")
            .skip(1)
            .map(|error| error.to_owned())
            .collect()
    }

    #[test]
    fn every_serde_attribute_is_refused_with_its_own_hint() {
        let found = errors(quote! {
            #[serde(rename_all = "camelCase")]
            pub struct User {
                #[serde(rename = "id", default)]
                pub user_id: u64,
                #[serde(flatten)]
                pub meta: Meta,
            }
        });
        assert_eq!(found.len(), 4, "{found:?}");
        for (error, hint) in found.iter().zip([
            "spell the Rust names that way",
            "rename the Rust field itself",
            "already takes its default",
            "no number of its own",
        ]) {
            assert!(error.contains(hint), "no `{hint}` in {error}");
        }
    }

    #[test]
    fn a_refused_message_is_still_emitted_without_the_attributes_only_the_macro_reads() {
        let expansion = super::expand(
            TokenStream::new(),
            quote! {
                #[wirecall(skip_debug)]
                #[serde(tag = "type")]
                pub enum Shape {
                    #[serde(rename = "c")]
                    Circle { #[serde(default)] radius: f64 },
                }
            },
        )
        .expect("expands");
        let text = expansion.to_string();
        assert!(text.starts_with("pub enum Shape"), "{text}");
        assert!(!text.contains("# [serde"), "{text}");
        assert!(!text.contains("# [wirecall"), "{text}");
        assert_eq!(text.matches("compile_error").count(), 3, "{text}");
    }

    #[test]
    fn serde_inside_cfg_attr_is_refused() {
        let found = errors(quote! {
            pub struct Reading {
                #[cfg_attr(test, serde(skip))]
                pub at: u64,
            }
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("serde(skip)"), "{found:?}");
    }
}
