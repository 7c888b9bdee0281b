//! Code generation for a validated message: the item with serde's derive (and `Debug`), then
//! the Protobuf, serde-reading and reflection impls of `codegen::proto_impls` and
//! `codegen::reflect`, which generated service messages share.
//!
//! - A struct gets serde's `Serialize` derive, a `Deserialize` through the runtime that lets
//!   messages gain and lose trailing fields, `Default`, prost's `Message` and `ProtoField`.
//! - A unit-only enum is a protobuf `enum`; serde goes through the runtime (name in JSON,
//!   number in MessagePack).
//! - An enum with data is a wrapper message with one oneof field per variant; serde derives
//!   it as serde does by default (externally tagged).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Fields, Ident, ItemEnum, ItemStruct, Member, Variant};

use super::parse::{MessageDef, MessageItem};
use crate::codegen::messages::{message_header, struct_header};
use crate::codegen::proto_impls::{self, FieldGen, VariantGen, VariantShape};
use crate::codegen::reflect;
use crate::proto_type;

/// Generates the full expansion of a validated message.
pub fn expand(def: &MessageDef) -> syn::Result<TokenStream> {
    match &def.item {
        MessageItem::Struct(item) => Ok(expand_struct(def, item.clone())),
        MessageItem::Enum(item) => expand_enum(def, item.clone()),
    }
}

fn expand_struct(def: &MessageDef, mut item: ItemStruct) -> TokenStream {
    let krate = &def.krate;
    for field in item.fields.iter_mut() {
        field
            .attrs
            .extend(proto_type::nested_option_attr(krate, &field.ty));
    }

    let fields: Vec<FieldGen<'_>> = item
        .fields
        .iter()
        .filter_map(|field| {
            field.ident.clone().map(|ident| FieldGen {
                member: Member::Named(ident),
                ty: &field.ty,
            })
        })
        .collect();
    let impls = proto_impls::struct_impls(krate, &item.ident, &fields);
    let field_docs: Vec<String> = item
        .fields
        .iter()
        .map(|field| reflect::doc_string(&field.attrs))
        .collect();
    let reflect = reflect::struct_reflect(
        krate,
        &item.ident,
        &reflect::doc_string(&item.attrs),
        &fields,
        &field_docs,
    );
    let checks = proto_impls::travel_checks(krate, fields.iter().map(|field| field.ty));
    let header = struct_header(krate);
    let debug = debug_derive(def.attrs.skip_debug());
    quote! {
        #checks
        #header
        #debug
        #item
        #[allow(clippy::all, clippy::pedantic, clippy::nursery, deprecated, unused_qualifications)]
        const _: () = {
            #impls
            #reflect
        };
    }
}

fn expand_enum(def: &MessageDef, mut item: ItemEnum) -> syn::Result<TokenStream> {
    let krate = &def.krate;
    let unit_only = def.unit_only();
    let other = def.catch_all().cloned();
    let ident = &item.ident;
    let doc = reflect::doc_string(&item.attrs);
    let variant_docs: Vec<String> = item
        .variants
        .iter()
        .map(|variant| reflect::doc_string(&variant.attrs))
        .collect();
    let checks = proto_impls::travel_checks(
        krate,
        item.variants
            .iter()
            .flat_map(|variant| variant.fields.iter().map(|field| &field.ty)),
    );
    let debug = debug_derive(def.attrs.skip_debug());
    let (serde, impls) = if unit_only {
        let mut variants: Vec<(&Ident, i32)> = Vec::with_capacity(item.variants.len());
        for (variant, variant_def) in item.variants.iter().zip(&def.variants) {
            let number = i32::try_from(variant_def.number).map_err(|_| {
                syn::Error::new_spanned(&variant.ident, "protobuf enum numbers are `i32`")
            })?;
            variants.push((&variant.ident, number));
        }
        let zero = variants
            .iter()
            .find(|(_, number)| *number == 0)
            .map(|(ident, _)| *ident)
            .ok_or_else(|| syn::Error::new_spanned(ident, "no variant is numbered 0"))?;
        let described: Vec<(&Ident, i32, String)> = variants
            .iter()
            .zip(&variant_docs)
            .map(|((ident, number), doc)| (*ident, *number, doc.clone()))
            .collect();
        let reflect = reflect::unit_enum_reflect(krate, ident, &doc, &described, other.as_ref());
        let impls = proto_impls::unit_enum_impls(krate, ident, &variants, zero, other.as_ref());
        (quote!(), quote!(#impls #reflect))
    } else {
        let variants: Vec<VariantGen<'_>> = item.variants.iter().map(variant_gen).collect();
        let tags = proto_impls::variant_tags(&variants, other.as_ref());
        let impls = proto_impls::data_enum_impls(krate, ident, &variants, other.as_ref());
        let described: Vec<(VariantGen<'_>, u32, String)> = item
            .variants
            .iter()
            .map(variant_gen)
            .zip(tags)
            .zip(&variant_docs)
            .map(|((variant, tag), doc)| (variant, tag, doc.clone()))
            .collect();
        let reflect = reflect::data_enum_reflect(krate, ident, &doc, &described, other.as_ref());
        (message_header(krate), quote!(#impls #reflect))
    };
    if !unit_only {
        // serde's derive writes the variants' data: the same `Option<Option<T>>` rule as a
        // struct field's, so that `Some(None)` survives JSON and MessagePack as it does
        // Protobuf.
        for variant in item.variants.iter_mut() {
            for field in variant.fields.iter_mut() {
                field
                    .attrs
                    .extend(proto_type::nested_option_attr(krate, &field.ty));
            }
        }
    }
    if let (false, Some(other)) = (unit_only, &other) {
        // serde's catch-all: an unknown variant name decodes to this variant.
        if let Some(variant) = item.variants.iter_mut().find(|v| &v.ident == other) {
            variant.attrs.push(syn::parse_quote!(#[serde(other)]));
        }
    }
    Ok(quote! {
        #checks
        #serde
        #debug
        #item
        #[allow(clippy::all, clippy::pedantic, clippy::nursery, deprecated, unused_qualifications)]
        const _: () = {
            #impls
        };
    })
}

fn variant_gen(variant: &Variant) -> VariantGen<'_> {
    let shape = match &variant.fields {
        Fields::Unit => VariantShape::Unit,
        Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
            VariantShape::Newtype(&fields.unnamed[0].ty)
        }
        Fields::Unnamed(fields) => VariantShape::Fields {
            named: false,
            fields: fields
                .unnamed
                .iter()
                .enumerate()
                .map(|(index, field)| FieldGen {
                    member: Member::Unnamed(index.into()),
                    ty: &field.ty,
                })
                .collect(),
        },
        Fields::Named(fields) => VariantShape::Fields {
            named: true,
            fields: fields
                .named
                .iter()
                .filter_map(|field| {
                    field.ident.clone().map(|ident| FieldGen {
                        member: Member::Named(ident),
                        ty: &field.ty,
                    })
                })
                .collect(),
        },
    };
    VariantGen {
        ident: &variant.ident,
        shape,
    }
}

fn debug_derive(skip: bool) -> TokenStream {
    if skip {
        quote!()
    } else {
        quote!(#[derive(::core::fmt::Debug)])
    }
}
