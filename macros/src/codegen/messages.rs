//! The per-method wire messages: one `Args` and one `Reply` struct per method, each usable by
//! every codec (serde for JSON/MessagePack, `ProtoField` for Protobuf).

use proc_macro2::TokenStream;
use quote::quote;

use syn::spanned::Spanned;
use syn::{Ident, Member, Type};

use super::proto_impls::{struct_impls, FieldGen};
use super::{MethodGen, ServiceGen};
use crate::parse::ReplyShape;
use crate::proto_type;

/// The serde derives of a `#[wirecall::message]` enum with data.
pub(crate) fn message_header() -> TokenStream {
    quote! {
        #[derive(
            ::wirecall::__private::serde::Serialize,
            ::wirecall::__private::serde::Deserialize,
        )]
        #[serde(crate = "::wirecall::__private::serde")]
    }
}

/// The serde derive every wire struct carries, generated or written by a user with
/// `#[wirecall::message]`; `Deserialize` and the Protobuf side are in `proto_impls`.
pub(crate) fn struct_header() -> TokenStream {
    quote! {
        #[derive(::wirecall::__private::serde::Serialize)]
        #[serde(crate = "::wirecall::__private::serde")]
    }
}

/// All `Args` and `Reply` structs of the service.
pub fn messages(service: &ServiceGen<'_>) -> TokenStream {
    let mut out = TokenStream::new();
    for method in &service.methods {
        let mut types: Vec<&Type> = method.def.args.iter().map(|arg| &arg.ty).collect();
        match &method.def.reply {
            ReplyShape::Unit => {}
            ReplyShape::Value(ty) => types.push(ty),
            ReplyShape::Result { ok, err, .. } => {
                types.extend(ok.as_deref());
                types.push(err);
            }
        }
        let checks = super::proto_impls::travel_checks(types);
        let cfg = &method.cfg_attrs;
        out.extend(quote!(#(#cfg)* #checks));
    }
    for method in &service.methods {
        out.extend(args_struct(method));
        out.extend(reply_struct(method));
    }
    out
}

/// `struct __XArgs { name: T, ... }`; arguments are fields 1..n.
fn args_struct(method: &MethodGen<'_>) -> TokenStream {
    let header = struct_header();
    let name = &method.args_struct;
    let attrs = &method.cfg_attrs;
    let idents = &method.arg_idents;
    let types: Vec<&Type> = method.def.args.iter().map(|arg| &arg.ty).collect();
    let serde_with: Vec<TokenStream> = types
        .iter()
        .map(|ty| {
            let attr = proto_type::nested_option_attr(ty);
            quote!(#attr)
        })
        .collect();
    let fields: Vec<FieldGen<'_>> = idents
        .iter()
        .zip(&types)
        .map(|(ident, ty)| FieldGen {
            member: Member::Named((*ident).clone()),
            ty,
        })
        .collect();
    let impls = struct_impls(name, &fields);
    quote! {
        #(#attrs)*
        #header
        struct #name {
            #(#serde_with #idents: #types),*
        }
        #(#attrs)*
        const _: () = { #impls };
    }
}

/// The reply: no fields for `()`, `value` (field 1) for `T`, `ok`/`err` (fields 1/2, each
/// optional) for results.
fn reply_struct(method: &MethodGen<'_>) -> TokenStream {
    let header = struct_header();
    let name = &method.reply_struct;
    let attrs = &method.cfg_attrs;
    let span = name.span();
    let (fields, types): (Vec<Ident>, Vec<Type>) = match &method.def.reply {
        ReplyShape::Unit => (Vec::new(), Vec::new()),
        ReplyShape::Value(ty) => (vec![Ident::new("value", span)], vec![ty.clone()]),
        ReplyShape::Result { ok, err, .. } => {
            let err_ty: Type = syn::parse_quote_spanned!(err.span()=> ::core::option::Option<#err>);
            let err_field = Ident::new("err", span);
            match ok {
                Some(ok) => {
                    let ok_ty: Type =
                        syn::parse_quote_spanned!(ok.span()=> ::core::option::Option<#ok>);
                    (vec![Ident::new("ok", span), err_field], vec![ok_ty, err_ty])
                }
                None => (vec![err_field], vec![err_ty]),
            }
        }
    };
    let gens: Vec<FieldGen<'_>> = fields
        .iter()
        .zip(&types)
        .map(|(ident, ty)| FieldGen {
            member: Member::Named(ident.clone()),
            ty,
        })
        .collect();
    let impls = struct_impls(name, &gens);
    let serde_with = types.iter().map(proto_type::nested_option_attr);
    let serde_with = serde_with.map(|attr| quote!(#attr));
    quote! {
        #(#attrs)*
        #header
        struct #name {
            #(#serde_with #fields: #types),*
        }
        #(#attrs)*
        const _: () = { #impls };
    }
}
