//! `#[wirecall::message]`: makes a struct with named fields encodable by every codec by adding
//! the serde and prost derives and a `#[prost(...)]` attribute per field.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::punctuated::Punctuated;
use syn::{Attribute, Fields, Item, ItemStruct, Path, Token};

use crate::codegen::messages::message_header;
use crate::proto_type;

/// Expands `#[message(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let item: Item = syn::parse2(item)?;
    let mut item = match item {
        Item::Struct(item) => item,
        Item::Enum(item) => {
            let (enum_token, ident) = (&item.enum_token, &item.ident);
            let error = syn::Error::new_spanned(
                quote!(#enum_token #ident),
                "#[wirecall::message] goes on a struct with named fields; for alternatives use a \
                 struct with one `Option<T>` field per variant",
            )
            .into_compile_error();
            // Keep the enum defined so that its uses add no further errors.
            return Ok(quote!(#item #error));
        }
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "#[wirecall::message] goes on a struct with named fields: \
                 `struct Name { field: Type }`",
            ))
        }
    };
    let original = item.clone();
    match expand_struct(args, &mut item) {
        Ok(tokens) => Ok(tokens),
        // The struct stays defined (as written, without our `#[prost]` field attributes), so
        // uses of it do not add "cannot find type" errors.
        Err(error) => {
            let item = original;
            let error = error.into_compile_error();
            Ok(quote!(#item #error))
        }
    }
}

fn expand_struct(args: TokenStream, item: &mut ItemStruct) -> syn::Result<TokenStream> {
    let mut errors: Option<syn::Error> = None;
    let mut push = |error: syn::Error| match &mut errors {
        Some(first) => first.combine(error),
        None => errors = Some(error),
    };

    if !args.is_empty() {
        push(syn::Error::new_spanned(
            &args,
            "#[wirecall::message] takes no arguments; write `#[wirecall::message]`",
        ));
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        push(syn::Error::new_spanned(
            &item.generics,
            "a message cannot be generic: protobuf fields have one fixed type; \
             write a struct with concrete field types",
        ));
    }
    match &item.fields {
        Fields::Named(_) => {}
        Fields::Unnamed(fields) => push(syn::Error::new_spanned(
            fields,
            "a message needs named fields (protobuf fields have names); \
             write `struct Name { field: Type }`",
        )),
        Fields::Unit => push(syn::Error::new_spanned(
            &item.ident,
            "a message needs named fields; write `struct Name {}` for an empty message",
        )),
    }

    let mut skip_debug = false;
    for attr in &item.attrs {
        for path in derived_paths(attr) {
            let Some(last) = path.segments.last() else {
                continue;
            };
            if last.ident == "Default" {
                push(syn::Error::new_spanned(
                    &path,
                    "remove `Default`: #[wirecall::message] provides it \
                     (every field starts at its protobuf default)",
                ));
            } else if last.ident == "Debug" {
                // prost's derive writes a `Debug` impl unless told not to.
                skip_debug = true;
            }
        }
    }
    if has_prost_skip_debug(&item.attrs) {
        skip_debug = false;
    }

    if let Fields::Named(fields) = &mut item.fields {
        for (field, tag) in fields.named.iter_mut().zip(1u32..) {
            if field.attrs.iter().any(|attr| attr.path().is_ident("prost")) {
                continue;
            }
            match proto_type::field_type(&field.ty) {
                Ok(kind) => {
                    let prost = kind.prost_attr(tag);
                    field.attrs.push(syn::parse_quote!(#[prost(#prost)]));
                }
                Err(error) => push(error),
            }
        }
    }

    if let Some(error) = errors {
        return Err(error);
    }
    let skip_debug = if skip_debug {
        quote!(#[prost(skip_debug)])
    } else {
        quote!()
    };
    let header = message_header();
    Ok(quote! {
        #header
        #skip_debug
        #item
    })
}

/// The paths listed in a `#[derive(...)]` attribute; nothing for other attributes.
fn derived_paths(attr: &Attribute) -> Vec<Path> {
    if !attr.path().is_ident("derive") {
        return Vec::new();
    }
    attr.parse_args_with(Punctuated::<Path, Token![,]>::parse_terminated)
        .map(|paths| paths.into_iter().collect())
        // A malformed derive is reported by rustc itself.
        .unwrap_or_default()
}

fn has_prost_skip_debug(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("prost")
            && attr
                .meta
                .to_token_stream()
                .into_iter()
                .any(|tree| tree.to_string().contains("skip_debug"))
    })
}
