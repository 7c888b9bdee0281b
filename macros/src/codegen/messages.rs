//! The per-method wire messages: each method's arguments, reply (or stream items) and uploaded
//! items, named as one `type __{Stem} = Messages<..>` that the client and the server hand to
//! the runtime.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Type};

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

/// The messages of every method: for each, `struct __{Stem}` implementing `MethodMessages`
/// (its arguments, reply or stream items, and uploaded items), and what that names. A service
/// with Protobuf names the runtime's generic messages (`Fields<Self, (Plain<T>, ..)>`,
/// `ValueMessage<T>`, ...) and gives only the argument names; a serde-only service generates
/// a serde struct per message, as its types may not implement `ProtoField`.
pub fn messages(service: &ServiceGen<'_>) -> TokenStream {
    let mut out = travel_checks(service, |method| {
        let mut types = method.arg_types.clone();
        types.extend(method.upload.as_ref().map(|upload| upload.item));
        match method.def.reply.message() {
            ReplyShape::Unit | ReplyShape::Stream { .. } => {}
            ReplyShape::Value(ty) => types.push(ty),
            ReplyShape::Result { ok, err, .. } => {
                types.extend(ok.as_deref());
                types.push(err);
            }
        }
        types
    });
    for method in &service.methods {
        let reply = reply_type(service, method);
        let upload = method
            .upload
            .as_ref()
            .map(|upload| upload_type(service, upload));
        out.extend(reply_items(service, method));
        out.extend(upload_items(service, method));
        out.extend(method_messages(service, method, reply, upload));
    }
    out
}

/// Only the arguments, for `#[events]` (whose handlers' errors stay local): each event's
/// `struct __{Stem}` with an empty reply.
pub fn args_messages(service: &ServiceGen<'_>) -> TokenStream {
    let mut out = travel_checks(service, |method| method.arg_types.clone());
    for method in &service.methods {
        let krate = &service.def.krate;
        let empty = quote!(#krate::__private::UnitMessage);
        out.extend(method_messages(service, method, empty, None));
    }
    out
}

/// `struct __{Stem}` and its `MethodMessages`; with Protobuf it also names the arguments
/// (`FieldNames`), without it the argument struct comes along.
fn method_messages(
    service: &ServiceGen<'_>,
    method: &MethodGen<'_>,
    reply: TokenStream,
    upload: Option<TokenStream>,
) -> TokenStream {
    let krate = &service.def.krate;
    let cfg = &method.cfg_attrs;
    let name = &method.messages;
    let upload = upload.unwrap_or_else(|| quote!(#krate::__private::UnitMessage));
    let (args, names) = if service.def.protobuf() {
        let slots = method.arg_types.iter().map(|ty| slot(krate, ty));
        let message = format!("{}Args", name.to_string().trim_start_matches('_'));
        let fields = method
            .arg_idents
            .iter()
            .map(|ident| ident.unraw().to_string());
        let names = quote! {
            #(#cfg)*
            impl #krate::__private::FieldNames for #name {
                const NAME: &'static str = #message;
                const FIELDS: &'static [&'static str] = &[#(#fields),*];
            }
        };
        (
            quote!(#krate::__private::Fields<Self, (#(#slots,)*)>),
            names,
        )
    } else {
        let args_struct = &method.args_struct;
        (quote!(#args_struct), serde_args(service, method))
    };
    quote! {
        #(#cfg)*
        struct #name;
        #names
        #(#cfg)*
        impl #krate::__private::MethodMessages for #name {
            type Args = #args;
            type Reply = #reply;
            type Upload = #upload;
        }
    }
}

/// For a service with Protobuf, one function naming `ProtoField` for every type its messages
/// carry, each spanned at the type, so that "`T` cannot travel in a wirecall message" is
/// reported on `T` before the client and the server, which use the messages, report it again
/// on the method.
fn travel_checks<'a>(
    service: &'a ServiceGen<'_>,
    types_of: impl Fn(&'a MethodGen<'_>) -> Vec<&'a Type>,
) -> TokenStream {
    if !service.def.protobuf() {
        return TokenStream::new();
    }
    let krate = &service.def.krate;
    let mut seen = HashSet::new();
    let mut checks = Vec::new();
    for method in &service.methods {
        let cfg = &method.cfg_attrs;
        let cfg_key = quote!(#(#cfg)*).to_string();
        for ty in types_of(method) {
            if seen.insert((cfg_key.clone(), quote!(#ty).to_string())) {
                checks.push(quote_spanned! {ty.span()=>
                    #(#cfg)*
                    let _ = <#ty as #krate::__private::proto::ProtoField>::proto_default;
                });
            }
        }
    }
    quote! {
        fn __wirecall_travel_checks() {
            #(#checks)*
        }
    }
}

/// The slot of a field of type `ty`: `Nested<ty>` for an `Option<Option<T>>` (whose serde
/// form keeps `Some(None)` apart from `None`), `Plain<ty>` otherwise.
fn slot(krate: &CratePath, ty: &Type) -> TokenStream {
    // Spanned at the type: a type that cannot travel is reported there.
    if proto_type::is_nested_option(ty) {
        quote_spanned!(ty.span()=> #krate::__private::Nested<#ty>)
    } else {
        quote_spanned!(ty.span()=> #krate::__private::Plain<#ty>)
    }
}

/// A serde-only service's argument struct and its `ArgsMessage`.
fn serde_args(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let cfg = &method.cfg_attrs;
    let name = &method.args_struct;
    let idents = &method.arg_idents;
    let types = &method.arg_types;
    let strukt = serde_struct(krate, name, idents, types, cfg);
    quote! {
        #strukt
        #(#cfg)*
        impl #krate::__private::ArgsMessage for #name {
            type Values = (#(#types,)*);
            fn from_values((#(#idents,)*): Self::Values) -> Self {
                Self { #(#idents),* }
            }
            fn into_values(self) -> Self::Values {
                (#(self.#idents,)*)
            }
        }
    }
}

/// The type of a method's reply message (of each item, for a stream).
fn reply_type(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    if !service.def.protobuf() {
        let name = &method.reply_struct;
        return quote!(#name);
    }
    let private = quote!(#krate::__private);
    let optional =
        |ty: &Type| -> Type { syn::parse_quote_spanned!(ty.span()=> ::core::option::Option<#ty>) };
    match method.def.reply.message() {
        ReplyShape::Unit | ReplyShape::Stream { .. } => quote!(#private::UnitMessage),
        ReplyShape::Value(ty) if proto_type::is_nested_option(ty) => {
            let slot = slot(krate, ty);
            quote!(#private::Fields<#private::ValueField, (#slot,)>)
        }
        ReplyShape::Value(ty) => quote_spanned!(ty.span()=> #private::ValueMessage<#ty>),
        ReplyShape::Result {
            ok: Some(ok), err, ..
        } => {
            let (ok_field, err_field) = (optional(ok), optional(err));
            if proto_type::is_nested_option(&ok_field) || proto_type::is_nested_option(&err_field) {
                let (ok_slot, err_slot) = (slot(krate, &ok_field), slot(krate, &err_field));
                quote!(#private::Fields<#private::OkErrFields, (#ok_slot, #err_slot)>)
            } else {
                quote_spanned!(ok.span()=> #private::ResultMessage<#ok, #err>)
            }
        }
        ReplyShape::Result { ok: None, err, .. } => {
            let err_field = optional(err);
            if proto_type::is_nested_option(&err_field) {
                let err_slot = slot(krate, &err_field);
                quote!(#private::Fields<#private::ErrField, (#err_slot,)>)
            } else {
                quote_spanned!(err.span()=> #private::UnitResultMessage<#err>)
            }
        }
    }
}

/// The type of the message one uploaded item travels in.
fn upload_type(service: &ServiceGen<'_>, upload: &UploadGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let item = upload.item;
    if !service.def.protobuf() {
        let name = &upload.message;
        quote!(#name)
    } else if proto_type::is_nested_option(item) {
        let slot = slot(krate, item);
        quote!(#krate::__private::Fields<#krate::__private::ValueField, (#slot,)>)
    } else {
        quote_spanned!(item.span()=> #krate::__private::ValueMessage<#item>)
    }
}

/// A serde-only service's reply struct and its `ItemMessage`: no fields for `()`, `value` for
/// `T`, optional `ok` and `err` for results.
fn reply_items(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    if service.def.protobuf() {
        return TokenStream::new();
    }
    let krate = &service.def.krate;
    let cfg = &method.cfg_attrs;
    let name = &method.reply_struct;
    let span = name.span();
    let optional =
        |ty: &Type| -> Type { syn::parse_quote_spanned!(ty.span()=> ::core::option::Option<#ty>) };
    let (fields, types, item_ty, from_item, into_item): (Vec<Ident>, Vec<Type>, _, _, _) =
        match method.def.reply.message() {
            ReplyShape::Unit | ReplyShape::Stream { .. } => (
                Vec::new(),
                Vec::new(),
                quote!(()),
                quote!((Self {}, false)),
                quote!(::core::result::Result::Ok(())),
            ),
            ReplyShape::Value(ty) => (
                vec![Ident::new("value", span)],
                vec![ty.clone()],
                quote!(#ty),
                quote!((Self { value: __item }, false)),
                quote!(::core::result::Result::Ok(self.value)),
            ),
            ReplyShape::Result { ok: None, err, .. } => (
                vec![Ident::new("err", span)],
                vec![optional(err)],
                quote!(::core::result::Result<(), #err>),
                quote! {
                    match __item {
                        ::core::result::Result::Ok(()) => (Self { err: ::core::option::Option::None }, false),
                        // An application error is a stream's last item.
                        ::core::result::Result::Err(__err) => (Self { err: ::core::option::Option::Some(__err) }, true),
                    }
                },
                quote! {
                    ::core::result::Result::Ok(match self.err {
                        ::core::option::Option::Some(__err) => ::core::result::Result::Err(__err),
                        ::core::option::Option::None => ::core::result::Result::Ok(()),
                    })
                },
            ),
            ReplyShape::Result {
                ok: Some(ok), err, ..
            } => (
                vec![Ident::new("ok", span), Ident::new("err", span)],
                vec![optional(ok), optional(err)],
                quote!(::core::result::Result<#ok, #err>),
                quote! {
                    match __item {
                        ::core::result::Result::Ok(__ok) => (
                            Self { ok: ::core::option::Option::Some(__ok), err: ::core::option::Option::None },
                            false,
                        ),
                        // An application error is a stream's last item.
                        ::core::result::Result::Err(__err) => (
                            Self { ok: ::core::option::Option::None, err: ::core::option::Option::Some(__err) },
                            true,
                        ),
                    }
                },
                quote!(#krate::__private::result_from_parts(self.ok, self.err)),
            ),
        };
    let fields: Vec<&Ident> = fields.iter().collect();
    let types: Vec<&Type> = types.iter().collect();
    let strukt = serde_struct(krate, name, &fields, &types, cfg);
    let item = item_message(krate, name, cfg, &item_ty, &from_item, &into_item);
    quote!(#strukt #item)
}

/// A serde-only service's upload struct (`value`) and its `ItemMessage`.
fn upload_items(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let Some(upload) = method.upload.as_ref().filter(|_| !service.def.protobuf()) else {
        return TokenStream::new();
    };
    let krate = &service.def.krate;
    let cfg = &method.cfg_attrs;
    let name = &upload.message;
    let value = Ident::new("value", name.span());
    let item = upload.item;
    let strukt = serde_struct(krate, name, &[&value], &[item], cfg);
    let impls = item_message(
        krate,
        name,
        cfg,
        &quote!(#item),
        &quote!((Self { value: __item }, false)),
        &quote!(::core::result::Result::Ok(self.value)),
    );
    quote!(#strukt #impls)
}

/// A serde struct for a serde-only service, with the `WireMessage` that encodes it with JSON
/// and MessagePack only.
fn serde_struct(
    krate: &CratePath,
    name: &Ident,
    fields: &[&Ident],
    types: &[&Type],
    cfg: &[syn::Attribute],
) -> TokenStream {
    let header = message_header(krate);
    let serde_with = types
        .iter()
        .map(|ty| proto_type::nested_option_attr(krate, ty));
    quote! {
        #(#cfg)*
        #header
        struct #name {
            #(#serde_with #fields: #types),*
        }
        #(#cfg)*
        impl #krate::WireMessage for #name {}
    }
}

/// `impl ItemMessage` for a serde-only reply or upload struct.
fn item_message(
    krate: &CratePath,
    name: &Ident,
    cfg: &[syn::Attribute],
    item_ty: &TokenStream,
    from_item: &TokenStream,
    into_item: &TokenStream,
) -> TokenStream {
    quote! {
        #(#cfg)*
        impl #krate::__private::ItemMessage for #name {
            type Item = #item_ty;
            fn from_item(__item: Self::Item) -> (Self, bool) {
                #from_item
            }
            fn into_item(self) -> ::core::result::Result<Self::Item, #krate::Error> {
                #into_item
            }
        }
    }
}
