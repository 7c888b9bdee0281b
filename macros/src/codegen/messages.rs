//! The per-method wire messages: one `Args` and one `Reply` struct per method, each usable by
//! every codec (serde for JSON/MessagePack, prost for Protobuf).

use proc_macro2::TokenStream;
use quote::quote;

use super::{MethodGen, ServiceGen};
use crate::parse::ReplyShape;
use crate::proto_type::{self, FieldType};

/// The derives and container attributes every wire message carries, generated or written by a
/// user with `#[wirecall::message]`.
pub(crate) fn message_header() -> TokenStream {
    quote! {
        #[derive(
            ::wirecall::__private::serde::Serialize,
            ::wirecall::__private::serde::Deserialize,
            ::wirecall::__private::prost::Message,
        )]
        #[serde(crate = "::wirecall::__private::serde")]
        #[prost(prost_path = "::wirecall::__private::prost")]
    }
}

/// All `Args` and `Reply` structs of the service.
pub fn messages(service: &ServiceGen<'_>) -> syn::Result<TokenStream> {
    let mut out = TokenStream::new();
    for method in &service.methods {
        out.extend(args_struct(method)?);
        out.extend(reply_struct(method)?);
    }
    Ok(out)
}

/// `struct __XArgs { #[prost(..., tag = "1")] name: T, ... }`; arguments are tagged 1..n.
fn args_struct(method: &MethodGen<'_>) -> syn::Result<TokenStream> {
    let header = message_header();
    let name = &method.args_struct;
    let mut fields = Vec::with_capacity(method.def.args.len());
    for ((arg, ident), tag) in method.def.args.iter().zip(&method.arg_idents).zip(1u32..) {
        let prost = proto_type::field_type(&arg.ty)?.prost_attr(tag);
        let ty = &arg.ty;
        fields.push(quote! {
            #[prost(#prost)]
            #ident: #ty
        });
    }
    Ok(quote! {
        #header
        struct #name {
            #(#fields),*
        }
    })
}

/// The reply: no fields for `()`, `value` (tag 1) for `T`, `ok`/`err` (tags 1/2) for results.
fn reply_struct(method: &MethodGen<'_>) -> syn::Result<TokenStream> {
    let header = message_header();
    let name = &method.reply_struct;
    let fields = match &method.def.reply {
        ReplyShape::Unit => quote!(),
        ReplyShape::Value(ty) => {
            let prost = proto_type::field_type(ty)?.prost_attr(1);
            quote! {
                #[prost(#prost)]
                value: #ty
            }
        }
        ReplyShape::Result { ok, err, .. } => {
            let err_prost = FieldType::Optional(proto_type::result_side(err)?).prost_attr(2);
            let err_field = quote! {
                #[prost(#err_prost)]
                err: ::core::option::Option<#err>
            };
            match ok {
                Some(ok) => {
                    let ok_prost = FieldType::Optional(proto_type::result_side(ok)?).prost_attr(1);
                    quote! {
                        #[prost(#ok_prost)]
                        ok: ::core::option::Option<#ok>,
                        #err_field
                    }
                }
                None => err_field,
            }
        }
    };
    Ok(quote! {
        #header
        struct #name {
            #fields
        }
    })
}
