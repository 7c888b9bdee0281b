//! `#[wirecall::service]`: parse, validate, generate; on failure, the user's trait plus errors.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemTrait;

use crate::parse::{parse_service, ServiceArgs, ServiceDef};
use crate::{codegen, expansion, validate};

/// Expands `#[service(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let item: ItemTrait = syn::parse2(item).map_err(|error| {
        syn::Error::new(
            error.span(),
            "#[wirecall::service] goes on a trait: `pub trait MyService { async fn ... }`",
        )
    })?;
    let args = match syn::parse2::<ServiceArgs>(args) {
        Ok(args) => args,
        Err(error) => return Ok(fallback(&item_without_oneway(item), error)),
    };
    let def = parse_service(args, item);
    if let Err(error) = validate::validate(&def) {
        return Ok(fallback(&def.item, error));
    }
    match codegen::expand(&def) {
        Ok(tokens) => {
            expansion::print_if_requested(&def.item.ident.to_string(), &tokens);
            Ok(tokens)
        }
        Err(error) => Ok(fallback(&def.item, error)),
    }
}

/// The user's trait as written (minus `#[oneway]`) followed by the errors: the trait keeps
/// the user's impls and calls type-checking, so the errors we report stay the first ones.
fn fallback(item: &ItemTrait, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    quote! {
        #item
        #error
    }
}

fn item_without_oneway(item: ItemTrait) -> ItemTrait {
    let ServiceDef { item, .. } = parse_service(ServiceArgs::default(), item);
    item
}
