//! The per-method wire messages: one `Args` and one `Reply` struct per method, each usable by
//! every codec (serde for JSON/MessagePack, `ProtoField` for Protobuf).

use proc_macro2::TokenStream;
use quote::quote;

use syn::spanned::Spanned;
use syn::{Ident, Member, Type};

use super::proto_impls::{struct_impls, FieldGen};
use super::{MethodGen, ServiceGen, UploadGen};
use crate::crate_path::CratePath;
use crate::parse::ReplyShape;
use crate::proto_type;

/// The serde derives of a `#[wirecall::message]` enum with data.
pub(crate) fn message_header(krate: &CratePath) -> TokenStream {
    let serde_crate = krate.string_with("::__private::serde");
    quote! {
        #[derive(
            #krate::__private::serde::Serialize,
            #krate::__private::serde::Deserialize,
        )]
        #[serde(crate = #serde_crate)]
    }
}

/// The serde derive every wire struct carries, generated or written by a user with
/// `#[wirecall::message]`; `Deserialize` and the Protobuf side are in `proto_impls`.
pub(crate) fn struct_header(krate: &CratePath) -> TokenStream {
    let serde_crate = krate.string_with("::__private::serde");
    quote! {
        #[derive(#krate::__private::serde::Serialize)]
        #[serde(crate = #serde_crate)]
    }
}

/// All `Args` and `Reply` structs of the service.
pub fn messages(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let mut out = TokenStream::new();
    if !service.def.protobuf() {
        for method in &service.methods {
            out.extend(serde_only(
                krate,
                args_fields(method),
                &method.args_struct,
                method,
            ));
            out.extend(serde_only(
                krate,
                reply_fields(method),
                &method.reply_struct,
                method,
            ));
            if let Some(upload) = &method.upload {
                out.extend(serde_only(
                    krate,
                    upload_fields(upload),
                    &upload.message,
                    method,
                ));
            }
        }
        return out;
    }
    for method in &service.methods {
        let mut types: Vec<&Type> = method.arg_types.clone();
        types.extend(method.upload.as_ref().map(|upload| upload.item));
        match method.def.reply.message() {
            ReplyShape::Unit | ReplyShape::Stream { .. } => {}
            ReplyShape::Value(ty) => types.push(ty),
            ReplyShape::Result { ok, err, .. } => {
                types.extend(ok.as_deref());
                types.push(err);
            }
        }
        let checks = super::proto_impls::travel_checks(krate, types);
        let cfg = &method.cfg_attrs;
        out.extend(quote!(#(#cfg)* #checks));
    }
    for method in &service.methods {
        out.extend(proto_struct(
            krate,
            args_fields(method),
            &method.args_struct,
            method,
        ));
        out.extend(proto_struct(
            krate,
            reply_fields(method),
            &method.reply_struct,
            method,
        ));
        if let Some(upload) = &method.upload {
            out.extend(proto_struct(
                krate,
                upload_fields(upload),
                &upload.message,
                method,
            ));
        }
    }
    out
}

/// The fields of a method's `Upload` struct, the message of one uploaded item: `value`.
fn upload_fields(upload: &UploadGen<'_>) -> (Vec<Ident>, Vec<Type>) {
    let span = upload.message.span();
    (vec![Ident::new("value", span)], vec![upload.item.clone()])
}

/// `impl ItemMessage` for the messages of each stream call: its `Reply` struct is the
/// message of one item the server sends (the one reply of a client-streaming method), its
/// `Upload` struct that of one item the client uploads.
pub fn item_impls(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let mut out = TokenStream::new();
    for method in &service.methods {
        let cfg = &method.cfg_attrs;
        if let Some(upload) = &method.upload {
            let message = &upload.message;
            let item = upload.item;
            out.extend(quote! {
                #(#cfg)*
                impl #krate::__private::ItemMessage for #message {
                    type Item = #item;

                    fn from_item(__item: Self::Item) -> (Self, bool) {
                        (Self { value: __item }, false)
                    }

                    fn into_item(self) -> ::core::result::Result<Self::Item, #krate::Error> {
                        ::core::result::Result::Ok(self.value)
                    }
                }
            });
        }
        let item = match &method.def.reply {
            ReplyShape::Stream { item, .. } => &**item,
            // A client-streaming method's one reply travels as the server's one item.
            reply if method.upload.is_some() => reply,
            _ => continue,
        };
        let reply_struct = &method.reply_struct;
        let (item_ty, from_item, into_item) = match item {
            ReplyShape::Unit => (
                quote!(()),
                quote!((Self {}, false)),
                quote!(::core::result::Result::Ok(())),
            ),
            ReplyShape::Result { ok: None, err, .. } => (
                quote!(::core::result::Result<(), #err>),
                quote! {
                    match __item {
                        ::core::result::Result::Ok(()) => (
                            Self { err: ::core::option::Option::None },
                            false,
                        ),
                        ::core::result::Result::Err(__err) => (
                            Self { err: ::core::option::Option::Some(__err) },
                            true,
                        ),
                    }
                },
                quote! {
                    ::core::result::Result::Ok(match self.err {
                        ::core::option::Option::Some(__err) => ::core::result::Result::Err(__err),
                        ::core::option::Option::None => ::core::result::Result::Ok(()),
                    })
                },
            ),
            ReplyShape::Value(ty) => (
                quote!(#ty),
                quote!((Self { value: __item }, false)),
                quote!(::core::result::Result::Ok(self.value)),
            ),
            ReplyShape::Result {
                ok: Some(ok), err, ..
            } => (
                quote!(::core::result::Result<#ok, #err>),
                quote! {
                    match __item {
                        ::core::result::Result::Ok(__ok) => (
                            Self {
                                ok: ::core::option::Option::Some(__ok),
                                err: ::core::option::Option::None,
                            },
                            false,
                        ),
                        // An application error is the stream's last item.
                        ::core::result::Result::Err(__err) => (
                            Self {
                                ok: ::core::option::Option::None,
                                err: ::core::option::Option::Some(__err),
                            },
                            true,
                        ),
                    }
                },
                quote!(#krate::__private::result_from_parts(self.ok, self.err)),
            ),
            // Refused by validation.
            _ => continue,
        };
        out.extend(quote! {
            #(#cfg)*
            impl #krate::__private::ItemMessage for #reply_struct {
                type Item = #item_ty;

                fn from_item(__item: Self::Item) -> (Self, bool) {
                    #from_item
                }

                fn into_item(self) -> ::core::result::Result<Self::Item, #krate::Error> {
                    #into_item
                }
            }
        });
    }
    out
}

/// Only the `Args` structs: what `#[events]` needs, whose handlers' errors stay local.
pub fn args_messages(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let mut out = TokenStream::new();
    for method in &service.methods {
        if service.def.protobuf() {
            let types = method.arg_types.iter().copied();
            let checks = super::proto_impls::travel_checks(krate, types);
            let cfg = &method.cfg_attrs;
            out.extend(quote!(#(#cfg)* #checks));
            out.extend(proto_struct(
                krate,
                args_fields(method),
                &method.args_struct,
                method,
            ));
        } else {
            out.extend(serde_only(
                krate,
                args_fields(method),
                &method.args_struct,
                method,
            ));
        }
    }
    out
}

/// The fields of a method's `Args` struct: the arguments, in order.
fn args_fields(method: &MethodGen<'_>) -> (Vec<Ident>, Vec<Type>) {
    method
        .arg_idents
        .iter()
        .map(|ident| (*ident).clone())
        .zip(method.arg_types.iter().map(|ty| (*ty).clone()))
        .unzip()
}

/// The fields of a method's `Reply` struct: none for `()`, `value` for `T`, optional `ok` and
/// `err` for results.
fn reply_fields(method: &MethodGen<'_>) -> (Vec<Ident>, Vec<Type>) {
    let span = method.reply_struct.span();
    match method.def.reply.message() {
        ReplyShape::Unit | ReplyShape::Stream { .. } => (Vec::new(), Vec::new()),
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
    }
}

/// A wire struct of a service without Protobuf: serde's derives and nothing else.
fn serde_only(
    krate: &CratePath,
    (fields, types): (Vec<Ident>, Vec<Type>),
    name: &Ident,
    method: &MethodGen<'_>,
) -> TokenStream {
    let header = message_header(krate);
    let attrs = &method.cfg_attrs;
    let serde_with = types.iter().map(|ty| {
        let attr = proto_type::nested_option_attr(krate, ty);
        quote!(#attr)
    });
    quote! {
        #(#attrs)*
        #header
        struct #name {
            #(#serde_with #fields: #types),*
        }
        #(#attrs)*
        impl #krate::WireMessage for #name {}
    }
}

/// A wire struct with Protobuf: serde's `Serialize`, and the impls of `proto_impls`; fields
/// are numbered 1..n in order.
fn proto_struct(
    krate: &CratePath,
    (fields, types): (Vec<Ident>, Vec<Type>),
    name: &Ident,
    method: &MethodGen<'_>,
) -> TokenStream {
    let header = struct_header(krate);
    let attrs = &method.cfg_attrs;
    let serde_with = types.iter().map(|ty| {
        let attr = proto_type::nested_option_attr(krate, ty);
        quote!(#attr)
    });
    let gens: Vec<FieldGen<'_>> = fields
        .iter()
        .zip(&types)
        .map(|(ident, ty)| FieldGen {
            member: Member::Named(ident.clone()),
            ty,
        })
        .collect();
    let impls = struct_impls(krate, name, &gens);
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
