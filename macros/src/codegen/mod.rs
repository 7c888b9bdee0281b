//! Code generation for `#[wirecall::service]`: the rewritten trait, the client, the server and
//! the per-method wire messages, joined in [`expand`].
//!
//! Everything here runs after validation, but still returns `syn::Result` instead of unwrapping
//! so that a validation gap becomes a spanned error rather than a panic.

mod client;
pub(crate) mod messages;
pub(crate) mod proto_impls;
pub(crate) mod reflect;
mod server;

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, LitInt, TraitItem};

use crate::crate_path::CratePath;
use crate::parse::{CodecName, MethodDef, ServiceDef};
use wirecall_wire::method_hash;

/// Per-method names and facts shared by the generators.
pub struct MethodGen<'a> {
    pub def: &'a MethodDef,
    /// The names of the arguments that travel in the call's frame (all but an upload), in
    /// order.
    pub arg_idents: Vec<&'a Ident>,
    /// Their types.
    pub arg_types: Vec<&'a syn::Type>,
    /// The upload argument, for a method that takes one.
    pub upload: Option<UploadGen<'a>>,
    /// `__GetUserId`: the method's messages (`Messages<Args, Reply, Upload>`), or, for an
    /// event, its argument message.
    pub messages: Ident,
    /// `__GetUserIdArgs`: the argument names (the argument struct of a serde-only service).
    pub args_struct: Ident,
    /// `__GetUserIdReply`: the reply struct of a serde-only service.
    pub reply_struct: Ident,
    /// The method id as a `u64` literal.
    pub id: LitInt,
    /// The method's `#[cfg(...)]` attributes, repeated on everything generated for it.
    pub cfg_attrs: Vec<syn::Attribute>,
}

/// A method's upload argument: `chunks: Streaming<T>`.
pub struct UploadGen<'a> {
    /// Its name.
    pub ident: &'a Ident,
    /// `T`.
    pub item: &'a syn::Type,
    /// `__StoreUpload`: the struct one uploaded item travels as, in a serde-only service.
    pub message: Ident,
}

impl MethodGen<'_> {
    /// Every argument in declaration order, the upload among them: how the handler is called
    /// (the handler's closure binds each argument to its own name).
    pub fn call_args(&self) -> Vec<TokenStream> {
        self.def
            .args
            .iter()
            .enumerate()
            .map(|(index, arg)| match (self.def.upload, arg.ident()) {
                (Some(upload), _) if upload == index => quote!(__upload),
                (_, Some(ident)) => quote!(#ident),
                // Refused by validation (and by `service_gen`).
                (_, None) => quote!(()),
            })
            .collect()
    }

    /// `(a, b,)`: the arguments that travel in the call's frame, as the tuple the runtime
    /// takes and gives back.
    pub fn args_tuple(&self) -> TokenStream {
        let idents = &self.arg_idents;
        quote_spanned!(self.def.sig.ident.span()=> (#(#idents,)*))
    }

    /// `::wirecall::MethodId::new(0x...u64)`.
    pub fn method_id_expr(&self, krate: &CratePath) -> TokenStream {
        let id = &self.id;
        quote!(#krate::MethodId::new(#id))
    }
}

/// Everything the generators need about the service.
pub struct ServiceGen<'a> {
    pub def: &'a ServiceDef,
    pub methods: Vec<MethodGen<'a>>,
    /// `UserServiceClient`.
    pub client: Ident,
    /// `UserServiceServer`.
    pub server: Ident,
}

/// Generates the full expansion of a validated service.
pub fn expand(def: &ServiceDef) -> syn::Result<TokenStream> {
    let service = service_gen(def)?;
    let service_trait = service_trait(def);
    let client_struct = client::client_struct(&service);
    let server_struct = server::server_struct(&service);
    let messages = messages::messages(&service);
    let descriptor = server::descriptor(&service);
    let client_impl = client::client_impl(&service)?;
    let server_impls = server::server_impls(&service);

    Ok(quote! {
        #service_trait
        #client_struct
        #server_struct

        // Helper items live in an anonymous const so their names cannot clash with the user's.
        // `deprecated`: calling a `#[deprecated]` method of the user's trait from the server is
        // not the user's use of it.
        #[allow(clippy::all, clippy::pedantic, clippy::nursery, dead_code, deprecated, non_camel_case_types, unused_qualifications)]
        const _: () = {
            #messages
            #descriptor
            #client_impl
            #server_impls
        };
    })
}

pub(crate) fn service_gen(def: &ServiceDef) -> syn::Result<ServiceGen<'_>> {
    let trait_ident = &def.item.ident;
    let camel_names: Vec<String> = def
        .methods
        .iter()
        .map(|method| upper_camel(&method.wire_name))
        .collect();
    // `get_user` and `getUser` both become `GetUser`; number the names if that happens.
    let distinct = camel_names.iter().collect::<HashSet<_>>().len() == camel_names.len();

    let mut methods = Vec::with_capacity(def.methods.len());
    for (index, (method, camel)) in def.methods.iter().zip(&camel_names).enumerate() {
        let mut arg_idents = Vec::with_capacity(method.args.len());
        let mut arg_types = Vec::with_capacity(method.args.len());
        for (index, arg) in method.args.iter().enumerate() {
            if method.upload == Some(index) {
                continue;
            }
            arg_types.push(&arg.ty);
            match arg.ident() {
                Some(ident) => arg_idents.push(ident),
                None => {
                    return Err(syn::Error::new_spanned(
                        &arg.pat,
                        "name each argument with a plain identifier",
                    ))
                }
            }
        }
        let stem = if distinct {
            camel.clone()
        } else {
            format!("{camel}{index}")
        };
        let span = method.sig.ident.span();
        let id = method_hash(&def.wire_name, &method.wire_name);
        let upload = match method.upload() {
            Some((arg, item)) => Some(UploadGen {
                ident: arg.ident().ok_or_else(|| {
                    syn::Error::new_spanned(&arg.pat, "name each argument with a plain identifier")
                })?,
                item,
                message: Ident::new(&format!("__{stem}Upload"), span),
            }),
            None => None,
        };
        methods.push(MethodGen {
            def: method,
            arg_idents,
            arg_types,
            upload,
            messages: Ident::new(&format!("__{stem}"), span),
            args_struct: Ident::new(&format!("__{stem}Args"), span),
            reply_struct: Ident::new(&format!("__{stem}Reply"), span),
            id: LitInt::new(&format!("{id:#018x}u64"), Span::call_site()),
            cfg_attrs: method
                .attrs
                .iter()
                .filter(|attr| attr.path().is_ident("cfg"))
                .cloned()
                .collect(),
        });
    }
    Ok(ServiceGen {
        def,
        methods,
        client: format_ident!("{}Client", trait_ident),
        server: format_ident!("{}Server", trait_ident),
    })
}

/// The user's trait with each `async fn` rewritten to return a `Send` future, so that the
/// server can run handlers on a multi-threaded runtime. Users still implement it with plain
/// `async fn`.
pub(crate) fn service_trait(def: &ServiceDef) -> TokenStream {
    let item = &def.item;
    let attrs = &item.attrs;
    let vis = &item.vis;
    let unsafety = &item.unsafety;
    let ident = &item.ident;
    let mut methods = def.methods.iter();
    let items = item.items.iter().map(|trait_item| match trait_item {
        TraitItem::Fn(_) => match methods.next() {
            Some(method) => trait_method(method),
            None => quote!(#trait_item),
        },
        other => quote!(#other),
    });
    quote! {
        #(#attrs)*
        #vis #unsafety trait #ident: ::core::marker::Send + ::core::marker::Sync + 'static {
            #(#items)*
        }
    }
}

fn trait_method(method: &MethodDef) -> TokenStream {
    let attrs = &method.attrs;
    let sig = &method.sig;
    let ident = &sig.ident;
    // Only the names go into the declaration: `mut name: T` is not allowed without a body.
    let inputs = sig.inputs.iter().map(|input| match input {
        syn::FnArg::Receiver(receiver) => quote!(#receiver),
        syn::FnArg::Typed(typed) => {
            let attrs = &typed.attrs;
            let ty = &typed.ty;
            match &*typed.pat {
                syn::Pat::Ident(pat) => {
                    let name = &pat.ident;
                    quote!(#(#attrs)* #name: #ty)
                }
                pat => quote!(#(#attrs)* #pat: #ty),
            }
        }
    });
    let output = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let span = ident.span();
    let future = quote_spanned! {span=>
        impl ::core::future::Future<Output = #output> + ::core::marker::Send
    };
    quote! {
        #(#attrs)*
        fn #ident(#(#inputs),*) -> #future;
    }
}

/// `get_user_id` -> `GetUserId`.
fn upper_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `::wirecall::Codec::Json`, ... for each codec the service supports, in its order.
pub fn codec_paths(service: &ServiceGen<'_>) -> Vec<TokenStream> {
    let krate = &service.def.krate;
    service
        .def
        .codecs
        .iter()
        .map(|codec| match codec {
            CodecName::Json => quote!(#krate::Codec::Json),
            CodecName::MessagePack => quote!(#krate::Codec::MessagePack),
            CodecName::Protobuf => quote!(#krate::Codec::Protobuf),
        })
        .collect()
}

/// Doc attributes of a method, carried over to the matching client method.
pub fn doc_attrs(method: &MethodDef) -> Vec<&syn::Attribute> {
    method
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .collect()
}

/// `#[cfg(...)]` and `#[deprecated]` attributes of a method, carried over to the client method
/// so that it exists when the trait method does and warns its callers as the trait would.
pub fn client_attrs(method: &MethodDef) -> Vec<&syn::Attribute> {
    method
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("deprecated"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::upper_camel;

    #[test]
    fn method_names_become_struct_stems() {
        assert_eq!(upper_camel("get_user_id"), "GetUserId");
        assert_eq!(upper_camel("ping"), "Ping");
        assert_eq!(upper_camel("_private__name"), "PrivateName");
    }
}
