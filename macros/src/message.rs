//! `#[wirecall::message]`: makes a struct with named fields, or an enum, encodable by every
//! codec. Parse and check the item here; `codegen::proto_impls` writes the Protobuf impls.
//!
//! - A struct gets serde's `Serialize` derive, a `Deserialize` through the runtime that lets
//!   messages gain and lose trailing fields, `Default`, prost's `Message` and `ProtoField`.
//! - A unit-only enum is a protobuf `enum`; serde goes through the runtime (name in JSON,
//!   number in MessagePack).
//! - An enum with data is a wrapper message with one oneof field per variant; serde derives
//!   it as serde does by default (externally tagged).

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Expr, ExprLit, ExprUnary, Fields, Ident, Item, ItemEnum, ItemStruct, Lit, Member,
    Path, Token, UnOp, Variant,
};

use crate::codegen::messages::{message_header, struct_header};
use crate::codegen::proto_impls::{self, FieldGen, VariantGen, VariantShape};
use crate::codegen::reflect;
use crate::crate_path::{self, CratePath};
use crate::errors::Errors;
use crate::proto_type;

/// The arguments of `#[wirecall::message(...)]`: only `crate = "..."`.
#[derive(Default)]
struct MessageArgs {
    krate: Option<CratePath>,
}

impl Parse for MessageArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = MessageArgs::default();
        while !input.is_empty() {
            let key: Ident = input.call(Ident::parse_any)?;
            if key != "crate" {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "unknown argument `{key}`; the only argument is \
                         `crate = \"path::to::wirecall\"`"
                    ),
                ));
            }
            if args.krate.is_some() {
                return Err(syn::Error::new_spanned(
                    &key,
                    "`crate` is given twice; keep one",
                ));
            }
            args.krate = Some(crate_path::parse_value(input, &key)?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

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
    match item {
        Item::Struct(item) => {
            let original = item.clone();
            // On failure the item stays defined as written, so its uses add no errors.
            expand_struct(item, &krate, errors).or_else(|error| {
                let error = error.into_compile_error();
                Ok(quote!(#original #error))
            })
        }
        Item::Enum(item) => {
            let mut plain = item.clone();
            strip_wirecall_attrs(&mut plain);
            expand_enum(item, &krate, errors).or_else(|error| {
                let error = error.into_compile_error();
                Ok(quote!(#plain #error))
            })
        }
        other => Err(syn::Error::new_spanned(
            other,
            "#[wirecall::message] goes on a struct with named fields or an enum",
        )),
    }
}

fn expand_struct(
    mut item: ItemStruct,
    krate: &CratePath,
    mut errors: Errors,
) -> syn::Result<TokenStream> {
    check_generics(&item.generics, &mut errors);
    match &item.fields {
        Fields::Named(_) => {}
        Fields::Unnamed(fields) => errors.spanned(
            fields,
            "a message needs named fields (protobuf fields have names); \
             write `struct Name { field: Type }`",
        ),
        Fields::Unit => errors.spanned(
            &item.ident,
            "a message needs named fields; write `struct Name {}` for an empty message",
        ),
    }
    let skip_debug = check_container_attrs(&mut item.attrs, true, &mut errors);
    for field in &item.fields {
        check_field(field, &mut errors);
    }
    errors.finish()?;
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
    let debug = debug_derive(skip_debug);
    Ok(quote! {
        #checks
        #header
        #debug
        #item
        #[allow(clippy::all, clippy::pedantic, clippy::nursery, deprecated, unused_qualifications)]
        const _: () = {
            #impls
            #reflect
        };
    })
}

fn expand_enum(
    mut item: ItemEnum,
    krate: &CratePath,
    mut errors: Errors,
) -> syn::Result<TokenStream> {
    check_generics(&item.generics, &mut errors);
    let skip_debug = check_container_attrs(&mut item.attrs, false, &mut errors);
    if item.variants.is_empty() {
        errors.spanned(
            &item.ident,
            "an enum with no variants has no value to send; add a variant",
        );
    }
    let other = other_variant(&item, &mut errors);
    let unit_only = item
        .variants
        .iter()
        .all(|variant| matches!(variant.fields, Fields::Unit));
    for variant in &item.variants {
        for field in &variant.fields {
            check_field(field, &mut errors);
        }
    }
    let numbers = if unit_only {
        unit_numbers(&item, &mut errors)
    } else {
        for variant in &item.variants {
            if let Some((_, discriminant)) = &variant.discriminant {
                errors.spanned(
                    discriminant,
                    "an enum with data numbers its variants by position; remove the \
                     discriminant",
                );
            }
        }
        Vec::new()
    };
    errors.finish()?;
    strip_wirecall_attrs(&mut item);

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
    let debug = debug_derive(skip_debug);
    let (serde, impls) = if unit_only {
        let variants: Vec<(&Ident, i32)> = item
            .variants
            .iter()
            .map(|variant| &variant.ident)
            .zip(numbers.iter().copied())
            .collect();
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

/// The numbers of a unit-only enum's variants, as Rust assigns discriminants: the written one,
/// or one more than the previous variant's, starting at 0.
fn unit_numbers(item: &ItemEnum, errors: &mut Errors) -> Vec<i32> {
    let mut numbers = Vec::with_capacity(item.variants.len());
    let mut next: i64 = 0;
    for variant in &item.variants {
        let number = match &variant.discriminant {
            Some((_, expr)) => match discriminant_value(expr) {
                Some(value) => value,
                None => {
                    errors.spanned(
                        expr,
                        "write the discriminant as an integer literal: it is the variant's \
                         protobuf number",
                    );
                    next
                }
            },
            None => next,
        };
        match i32::try_from(number) {
            Ok(number) => {
                if numbers.contains(&number) {
                    errors.spanned(&variant.ident, format!("number {number} is used twice"));
                }
                numbers.push(number);
            }
            Err(_) => errors.spanned(
                &variant.ident,
                "protobuf enum numbers are `i32`; use a smaller discriminant",
            ),
        }
        next = number.saturating_add(1);
    }
    if !numbers.is_empty() && !numbers.contains(&0) {
        errors.spanned(
            &item.ident,
            "a protobuf enum needs a variant numbered 0 (what a missing field decodes to); \
             give one variant `= 0` or remove the discriminants",
        );
    }
    numbers
}

fn discriminant_value(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse().ok(),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => discriminant_value(expr).map(|value| -value),
        Expr::Group(group) => discriminant_value(&group.expr),
        Expr::Paren(paren) => discriminant_value(&paren.expr),
        _ => None,
    }
}

/// The variant marked `#[wirecall(other)]`, checked: one, last, without data.
fn other_variant(item: &ItemEnum, errors: &mut Errors) -> Option<Ident> {
    let mut found = None;
    let last = item.variants.len().saturating_sub(1);
    for (index, variant) in item.variants.iter().enumerate() {
        for attr in variant
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("wirecall"))
        {
            match attr.parse_args::<Ident>() {
                Ok(word) if word == "other" => {}
                _ => {
                    errors.spanned(attr, "the only variant attribute is `#[wirecall(other)]`");
                    continue;
                }
            }
            if !matches!(variant.fields, Fields::Unit) || index != last {
                errors.spanned(
                    attr,
                    "#[wirecall(other)] goes on the last variant, which must carry no data \
                     (unknown variants from a newer peer decode to it)",
                );
            } else if found.is_some() {
                errors.spanned(attr, "only one variant can be #[wirecall(other)]");
            } else {
                found = Some(variant.ident.clone());
            }
        }
    }
    found
}

fn strip_wirecall_attrs(item: &mut ItemEnum) {
    for variant in &mut item.variants {
        variant
            .attrs
            .retain(|attr| !attr.path().is_ident("wirecall"));
    }
    item.attrs.retain(|attr| !is_skip_debug(attr));
}

fn check_generics(generics: &syn::Generics, errors: &mut Errors) {
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        errors.spanned(
            generics,
            "a message cannot be generic: protobuf fields have one fixed type; \
             use concrete field types",
        );
    }
}

fn check_field(field: &syn::Field, errors: &mut Errors) {
    if let Some(attr) = field
        .attrs
        .iter()
        .find(|attr| attr.path().is_ident("prost"))
    {
        errors.spanned(
            attr,
            "remove `#[prost(...)]`: #[wirecall::message] numbers fields by position and picks \
             their protobuf types itself",
        );
    }
    if let Some(attr) = field
        .attrs
        .iter()
        .find(|attr| attr.path().is_ident("serde"))
    {
        errors.spanned(
            attr,
            "remove `#[serde(...)]`: a message's field names and order are its wire format in \
             every codec",
        );
    }
    if let Err(error) = proto_type::check(&field.ty) {
        errors.push(error);
    }
}

/// Refuses a derived `Default` on a struct (which gets one from us; an enum does not) and
/// removes `#[wirecall(skip_debug)]`; returns whether `Debug` must not be derived (the user
/// derives it, or implements it and said `skip_debug`).
fn check_container_attrs(
    attrs: &mut Vec<Attribute>,
    provides_default: bool,
    errors: &mut Errors,
) -> bool {
    let mut skip_debug = attrs.iter().any(is_skip_debug);
    attrs.retain(|attr| !is_skip_debug(attr));
    for attr in attrs.iter() {
        for path in derived_paths(attr) {
            let Some(last) = path.segments.last() else {
                continue;
            };
            if last.ident == "Default" && provides_default {
                errors.spanned(
                    &path,
                    "remove `Default`: #[wirecall::message] provides it \
                     (every field starts at its protobuf default)",
                );
            } else if last.ident == "Debug" {
                skip_debug = true;
            }
        }
    }
    skip_debug
}

/// `#[wirecall(skip_debug)]`, or the older spelling `#[prost(skip_debug)]`.
fn is_skip_debug(attr: &Attribute) -> bool {
    (attr.path().is_ident("wirecall") || attr.path().is_ident("prost"))
        && attr
            .parse_args::<Ident>()
            .is_ok_and(|word| word == "skip_debug")
}

fn debug_derive(skip: bool) -> TokenStream {
    if skip {
        quote!()
    } else {
        quote!(#[derive(::core::fmt::Debug)])
    }
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
