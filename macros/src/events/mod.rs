//! `#[wirecall::events]`: parse, validate, generate; on failure, the user's trait plus errors.
//!
//! An event contract is read with the service macro's parser (same arguments, same method
//! model) and checked with its signature and type rules; only what an event may return, the
//! markers and the generated names differ, which `validate.rs` here checks. `codegen.rs`
//! writes the trait, `{Trait}Publisher` and `{Trait}Subscriber`.

mod codegen;
mod parse;
mod validate;

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemTrait;

use crate::expansion;
use crate::parse::ServiceArgs;

/// Expands `#[events(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let item: ItemTrait = syn::parse2(item).map_err(|error| {
        syn::Error::new(
            error.span(),
            "#[wirecall::events] goes on a trait: `pub trait UserEvents { async fn user_created(&self, user: User); }`",
        )
    })?;
    let args = match syn::parse2::<ServiceArgs>(args) {
        Ok(args) => args,
        Err(error) => {
            return Ok(fallback(
                &parse::parse_events(ServiceArgs::default(), item).def.item,
                error,
            ))
        }
    };
    let contract = parse::parse_events(args, item);
    if let Err(error) = validate::validate(&contract) {
        return Ok(fallback(&contract.def.item, error));
    }
    match codegen::expand(&contract) {
        Ok(tokens) => {
            expansion::print_if_requested(&contract.def.item.ident.to_string(), &tokens);
            Ok(tokens)
        }
        Err(error) => Ok(fallback(&contract.def.item, error)),
    }
}

/// The user's trait as written followed by the errors, so that the user's impls still
/// type-check and our errors stay the first ones.
fn fallback(item: &ItemTrait, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    quote! {
        #item
        #error
    }
}
