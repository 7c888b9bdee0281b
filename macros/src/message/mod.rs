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
