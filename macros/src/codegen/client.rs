//! The typed client: `{Trait}Client`, a thin wrapper over `wirecall::Channel` (one server or a
//! balanced fleet) with one `async` method per service method.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::{client_attrs, doc_attrs, MethodGen, ServiceGen};
use crate::parse::ReplyShape;

/// `pub struct {Trait}Client { channel: Channel }`: one server, or a balanced fleet, behind the
/// same type.
pub fn client_struct(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let vis = &service.def.item.vis;
    let client = &service.client;
    let doc = format!(
        " Typed client for [`{}`]. Cheap to clone; clones share the channel's connections.\n\n \
         Its `Channel` reaches one server (`connect`, `new`) or every live endpoint of the \
         service in a registry (`discover`): the calls are the same.",
        service.def.item.ident
    );
    quote! {
        #[doc = #doc]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        #vis struct #client {
            channel: #krate::Channel,
        }
    }
}

/// The client's constructors, accessors and one method per service method.
pub fn client_impl(service: &ServiceGen<'_>) -> syn::Result<TokenStream> {
    let krate = &service.def.krate;
    let client = &service.client;
    let wire_name = &service.def.wire_name;
    let offer = if service.def.protobuf() {
        quote!(#krate::Codec::available())
    } else {
        let codecs = super::codec_paths(service);
        quote!([#(#codecs),*])
    };
    let connect = if service.def.protobuf() {
        quote! {
            /// Connects to `addr` with default options (all codecs offered).
            pub async fn connect<__A: #krate::__private::ToSocketAddrs>(
                addr: __A,
            ) -> ::core::result::Result<Self, #krate::Error> {
                ::core::result::Result::map(#krate::Channel::connect(addr).await, Self::new)
            }
        }
    } else {
        let codecs = super::codec_paths(service);
        quote! {
            /// Connects to `addr`, offering the codecs the service lists in
            /// `#[service(codecs(...))]`.
            pub async fn connect<__A: #krate::__private::ToSocketAddrs>(
                addr: __A,
            ) -> ::core::result::Result<Self, #krate::Error> {
                ::core::result::Result::map(
                    #krate::Channel::builder().codecs([#(#codecs),*]).connect(addr).await,
                    Self::new,
                )
            }
        }
    };
    let methods = service
        .methods
        .iter()
        .map(|method| client_method(service, method))
        .collect::<syn::Result<Vec<_>>>()?;
    Ok(quote! {
        impl #client {
            /// The service's wire name.
            pub const SERVICE_NAME: &'static str = #wire_name;

            #connect

            /// A client over every live endpoint of this service in `registry`, balanced by
            /// `balance`, with default channel options. Waits until the registry has answered
            /// once (at most the connect timeout, 10 s).
            pub async fn discover(
                registry: &#krate::discovery::Registry,
                balance: #krate::discovery::Balance,
            ) -> ::core::result::Result<Self, #krate::Error> {
                ::core::result::Result::map(
                    #krate::Channel::balanced()
                        .balance(balance)
                        .channel(#krate::Channel::builder().codecs(#offer))
                        .discover(registry, #wire_name)
                        .await,
                    Self::new,
                )
            }

            /// A client whose calls go through `channel` (one server or a balanced fleet; one
            /// channel can carry several services).
            pub fn new(channel: #krate::Channel) -> Self {
                Self { channel }
            }

            /// The channel under this client.
            pub fn channel(&self) -> &#krate::Channel {
                &self.channel
            }

            /// The codec of the connection calls use now.
            pub fn codec(&self) -> #krate::Codec {
                self.channel.codec()
            }

            /// A client whose calls use `timeout` as their deadline.
            pub fn with_timeout(&self, timeout: #krate::__private::Duration) -> Self {
                Self {
                    channel: self.channel.with_timeout(timeout),
                }
            }

            #(#methods)*
        }
    })
}

fn client_method(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> syn::Result<TokenStream> {
    let krate = &service.def.krate;
    let ident = &method.def.sig.ident;
    let docs = doc_attrs(method.def);
    let attrs = client_attrs(method.def);
    let docs = if docs.is_empty() {
        let doc = format!(
            " Calls `{}` on the remote [`{}`].",
            method.def.wire_name, service.def.item.ident
        );
        quote!(#[doc = #doc])
    } else {
        quote!(#(#docs)*)
    };
    let docs = quote!(#docs #(#attrs)*);
    let params = method.def.args.iter().enumerate().map(|(index, arg)| {
        let ident = arg.ident();
        match &method.upload {
            // The upload: any stream of its items.
            Some(upload) if method.def.upload == Some(index) => {
                let item = upload.item;
                quote! {
                    #ident: impl #krate::__private::Stream<Item = #item>
                        + ::core::marker::Send
                        + 'static
                }
            }
            _ => {
                let ty = &arg.ty;
                quote!(#ident: #ty)
            }
        }
    });
    let messages = &method.messages;
    let args = method.args_tuple();
    let declared = declared_method(service, method);
    // The calls are spanned at the method: a type of its that cannot travel is reported
    // there (rustc reports an expression at its first token, the crate path).
    let span = ident.span();
    let wirecall = krate.at(span);

    if method.def.oneway.is_some() {
        let notify = quote_spanned! {span=>
            #wirecall::__private::notify::<#messages>(&self.channel, &__METHOD, #args).await
        };
        return Ok(quote! {
            #docs
            ///
            /// One-way: resolves once the request is queued; the server sends no reply.
            pub async fn #ident(&self, #(#params),*) -> ::core::result::Result<(), #krate::Error> {
                #declared
                #notify
            }
        });
    }

    if let Some(upload) = &method.upload {
        let upload_ident = upload.ident;
        let name = upload_ident.to_string();
        if let ReplyShape::Stream { item, .. } = &method.def.reply {
            let item_ty = item_type(item);
            let open = quote_spanned! {span=>
                #wirecall::__private::open_upload::<#messages, _>(&self.channel, &__METHOD, #args, #upload_ident).await
            };
            let note = format!(
                " A bidirectional stream: uploads the items of `{name}` as the server takes \
                 them, and yields the server's items as they come. The call's deadline bounds \
                 the whole stream; dropping the returned stream cancels the call."
            );
            return Ok(quote! {
                #docs
                ///
                #[doc = #note]
                pub async fn #ident(
                    &self,
                    #(#params),*
                ) -> ::core::result::Result<#krate::client::ItemStream<#item_ty>, #krate::Error> {
                    #declared
                    #open
                }
            });
        }
        let output = item_type(&method.def.reply);
        let upload = quote_spanned! {span=>
            #wirecall::__private::upload::<#messages, _>(&self.channel, &__METHOD, #args, #upload_ident).await
        };
        let note = format!(
            " A client stream: uploads the items of `{name}` as the server takes them, and \
             resolves with the server's reply, which may come before the upload is over (the \
             upload then stops). The call's deadline bounds the whole call."
        );
        return Ok(quote! {
            #docs
            ///
            #[doc = #note]
            pub async fn #ident(
                &self,
                #(#params),*
            ) -> ::core::result::Result<#output, #krate::Error> {
                #declared
                #upload
            }
        });
    }
    if let ReplyShape::Stream { item, .. } = &method.def.reply {
        let item_ty = item_type(item);
        let open = quote_spanned! {span=>
            #wirecall::__private::open_stream::<#messages>(&self.channel, &__METHOD, #args).await
        };
        return Ok(quote! {
            #docs
            ///
            /// A server stream: resolves once the stream is open, then yields the items as the
            /// server sends them. The call's deadline bounds the whole stream; dropping the
            /// stream cancels the call.
            pub async fn #ident(
                &self,
                #(#params),*
            ) -> ::core::result::Result<#krate::client::ItemStream<#item_ty>, #krate::Error> {
                #declared
                #open
            }
        });
    }
    let output = item_type(&method.def.reply);
    let body = quote_spanned! {span=>
        #wirecall::__private::call::<#messages>(&self.channel, &__METHOD, #args).await
    };
    let body = match &method.def.policy.fallback {
        None => body,
        Some(fallback) => with_fallback(service, method, fallback, body, &output),
    };
    Ok(quote! {
        #docs
        pub async fn #ident(&self, #(#params),*) -> ::core::result::Result<#output, #krate::Error> {
            #declared
            #body
        }
    })
}

/// The Rust type of one message of shape `shape`, as the caller receives it.
fn item_type(shape: &ReplyShape) -> TokenStream {
    match shape {
        ReplyShape::Unit => quote!(()),
        ReplyShape::Value(ty) => quote!(#ty),
        ReplyShape::Result {
            ok: Some(ok), err, ..
        } => quote!(::core::result::Result<#ok, #err>),
        ReplyShape::Result { ok: None, err, .. } => quote!(::core::result::Result<(), #err>),
        // Refused by validation.
        ReplyShape::Stream { .. } => quote!(()),
    }
}

/// `static __METHOD`: the method as its declaration gives it to the channel: its names and id,
/// whether it is `#[idempotent]`, and its policy (the trait's defaults under its own
/// `#[wirecall(..)]`).
fn declared_method(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let idempotent = method.def.idempotent.is_some();
    let service_name = &service.def.wire_name;
    let method_name = &method.def.wire_name;
    let mut expr = quote!(#krate::__private::Method::new(#service_name, #method_name));
    if idempotent {
        expr = quote!(#expr.idempotent());
    }
    if !method.def.policy.is_empty() || !service.def.policy.is_empty() {
        let policy = method
            .def
            .policy
            .method_policy_expr(&service.def.policy, idempotent, krate);
        expr = quote!(#expr.with_policy(#policy));
    }
    quote! {
        static __METHOD: #krate::__private::Method = #expr;
    }
}

/// The call's `body`, answered by `fallback(error, args..)` when it fails for a reason
/// outside the method (`wirecall::policy::takes_fallback`). The arguments are cloned before
/// the call for it: a missing `Clone` is reported on the `fallback` path.
fn with_fallback(
    service: &ServiceGen<'_>,
    method: &MethodGen<'_>,
    fallback: &syn::Path,
    body: TokenStream,
    output: &TokenStream,
) -> TokenStream {
    let krate = &service.def.krate;
    let span = syn::spanned::Spanned::span(fallback);
    let idents = &method.arg_idents;
    let clones = idents
        .iter()
        .map(|ident| quote::quote_spanned!(span=> ::core::clone::Clone::clone(&#ident)));
    let call_fallback = quote::quote_spanned!(span=> #fallback(__error, #(#idents),*).await);
    quote! {
        let __for_fallback = (#(#clones,)*);
        let __result: ::core::result::Result<#output, #krate::Error> = async { #body }.await;
        match __result {
            ::core::result::Result::Err(__error)
                if #krate::__private::fallback_for(&__METHOD, &__error) =>
            {
                let (#(#idents,)*) = __for_fallback;
                #call_fallback
            }
            __answered => __answered,
        }
    }
}
