//! The server side: `{Trait}Server<S>`, the service descriptor, and the `wirecall::Service`
//! impl whose `call` is one `match` on the method id handing off to the runtime's `dispatch`.

use proc_macro2::TokenStream;
use quote::quote;

use super::{MethodGen, ServiceGen};
use crate::parse::ReplyShape;

/// `pub struct {Trait}Server<S> { inner: Arc<S> }` with `Clone` and `Debug` that need nothing
/// from `S`.
pub fn server_struct(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let vis = &service.def.item.vis;
    let server = &service.server;
    let server_name = server.to_string();
    let doc = format!(
        " Serves a [`{}`] implementation; pass it to `wirecall::ServerBuilder::serve`.",
        service.def.item.ident
    );
    quote! {
        #[doc = #doc]
        #vis struct #server<S> {
            inner: #krate::__private::Arc<S>,
        }

        // Written by hand: a derive would require `S: Clone`, but clones only share the `Arc`.
        impl<__S> ::core::clone::Clone for #server<__S> {
            fn clone(&self) -> Self {
                Self {
                    inner: ::core::clone::Clone::clone(&self.inner),
                }
            }
        }

        impl<__S> ::core::fmt::Debug for #server<__S> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Formatter::debug_struct(f, #server_name).finish_non_exhaustive()
            }
        }
    }
}

/// `static __DESCRIPTOR: ServiceDescriptor`, which the server uses to route and to know which
/// methods are one-way.
pub fn descriptor(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let wire_name = &service.def.wire_name;
    let methods = service.methods.iter().map(|method| {
        let name = &method.def.wire_name;
        let id = method.method_id_expr(krate);
        let oneway = method.def.oneway.is_some();
        let shape = match (method.upload.is_some(), method.def.reply.is_stream()) {
            (false, false) => quote!(#krate::MethodShape::Unary),
            (false, true) => quote!(#krate::MethodShape::ServerStream),
            (true, false) => quote!(#krate::MethodShape::ClientStream),
            (true, true) => quote!(#krate::MethodShape::BidiStream),
        };
        let cfg = &method.cfg_attrs;
        quote! {
            #(#cfg)*
            #krate::MethodDescriptor {
                name: #name,
                id: #id,
                oneway: #oneway,
                shape: #shape,
            }
        }
    });
    let codecs = super::codec_paths(service);
    quote! {
        static __DESCRIPTOR: #krate::ServiceDescriptor = #krate::ServiceDescriptor {
            name: #wire_name,
            methods: &[#(#methods),*],
            codecs: &[#(#codecs),*],
        };
    }
}

/// The server's constructors and its `wirecall::Service` impl.
pub fn server_impls(service: &ServiceGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let server = &service.server;
    let trait_ident = &service.def.item.ident;
    let arms = service
        .methods
        .iter()
        .filter(|method| !method.def.is_stream_call())
        .map(|method| dispatch_arm(service, method));
    let stream_arms: Vec<TokenStream> = service
        .methods
        .iter()
        .filter(|method| method.def.is_stream_call())
        .map(|method| open_arm(service, method))
        .collect();
    // Only services with a streaming method replace the default `open`.
    let open = (!stream_arms.is_empty()).then(|| {
        quote! {
            fn open(
                &self,
                __method: #krate::MethodId,
                __codec: #krate::Codec,
                __payload: #krate::__private::Bytes,
                __upload: #krate::stream::Upload,
            ) -> #krate::stream::OpenFuture {
                match #krate::MethodId::get(__method) {
                    #(#stream_arms)*
                    _ => #krate::__private::unknown_stream(__method),
                }
            }
        }
    });
    let schema = super::reflect::service_schema(service);
    quote! {
        impl<__S: #trait_ident> #server<__S> {
            /// Wraps an implementation.
            pub fn new(service: __S) -> Self {
                Self {
                    inner: #krate::__private::Arc::new(service),
                }
            }

            /// Wraps a shared implementation.
            pub fn from_arc(service: #krate::__private::Arc<__S>) -> Self {
                Self { inner: service }
            }
        }

        impl<__S: #trait_ident> #krate::Service for #server<__S> {
            fn descriptor(&self) -> &'static #krate::ServiceDescriptor {
                &__DESCRIPTOR
            }

            fn call(
                &self,
                __method: #krate::MethodId,
                __codec: #krate::Codec,
                __payload: #krate::__private::Bytes,
            ) -> #krate::ReplyFuture {
                match #krate::MethodId::get(__method) {
                    #(#arms)*
                    _ => #krate::__private::unknown_method(__method),
                }
            }

            #open

            #schema
        }
    }
}

/// The arm of `open` for a stream call: the handler's items (or its one reply, for a
/// client-streaming method), each encoded as the method's item message (its `Reply`
/// struct), and for a method that takes an upload, the client's items as its `Streaming`
/// argument.
fn open_arm(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let trait_ident = &service.def.item.ident;
    let ident = &method.def.sig.ident;
    let id = &method.id;
    let args_struct = &method.args_struct;
    let reply_struct = &method.reply_struct;
    let args = method.call_args();
    let args_binding = if method.arg_idents.is_empty() {
        quote!(_)
    } else {
        quote!(__args)
    };
    let call = quote!(<__S as #trait_ident>::#ident(&*__inner, #(#args),*).await);
    let serve = match (&method.upload, method.def.reply.is_stream()) {
        (None, _) => quote! {
            #krate::__private::serve_stream::<#args_struct, #reply_struct, _, _>(
                __codec,
                __payload,
                move |#args_binding: #args_struct| async move { #call },
            )
        },
        (Some(upload), bidirectional) => {
            let message = &upload.message;
            let helper = if bidirectional {
                quote!(serve_bidi_stream)
            } else {
                quote!(serve_client_stream)
            };
            quote! {
                #krate::__private::#helper::<#args_struct, #message, #reply_struct, _, _>(
                    __codec,
                    __payload,
                    __upload,
                    move |#args_binding: #args_struct, __upload| async move { #call },
                )
            }
        }
    };
    let cfg = &method.cfg_attrs;
    quote! {
        #(#cfg)*
        #id => {
            let __inner = ::core::clone::Clone::clone(&self.inner);
            #serve
        }
    }
}

fn dispatch_arm(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let trait_ident = &service.def.item.ident;
    let ident = &method.def.sig.ident;
    let id = &method.id;
    let args_struct = &method.args_struct;
    let reply_struct = &method.reply_struct;
    let args = method.arg_idents.iter().map(|arg| quote!(__args.#arg));
    // Fully qualified so that a method named like an `Arc` method (`clone`, ...) still calls
    // the user's implementation.
    let call = quote! {
        <__S as #trait_ident>::#ident(&*__inner, #(#args),*).await
    };
    let reply = match &method.def.reply {
        ReplyShape::Unit => quote! {
            #call;
            #reply_struct {}
        },
        ReplyShape::Value(_) => quote! {
            #reply_struct { value: #call }
        },
        ReplyShape::Result { ok: Some(_), .. } => quote! {
            match #call {
                ::core::result::Result::Ok(__ok) => #reply_struct {
                    ok: ::core::option::Option::Some(__ok),
                    err: ::core::option::Option::None,
                },
                ::core::result::Result::Err(__err) => #reply_struct {
                    ok: ::core::option::Option::None,
                    err: ::core::option::Option::Some(__err),
                },
            }
        },
        // Served by `open_arm`.
        ReplyShape::Stream { .. } => return TokenStream::new(),
        ReplyShape::Result { ok: None, .. } => quote! {
            match #call {
                ::core::result::Result::Ok(()) => #reply_struct {
                    err: ::core::option::Option::None,
                },
                ::core::result::Result::Err(__err) => #reply_struct {
                    err: ::core::option::Option::Some(__err),
                },
            }
        },
    };
    let args_binding = if method.arg_idents.is_empty() {
        quote!(_)
    } else {
        quote!(__args)
    };
    let cfg = &method.cfg_attrs;
    quote! {
        #(#cfg)*
        #id => {
            let __inner = ::core::clone::Clone::clone(&self.inner);
            #krate::__private::dispatch(
                __codec,
                __payload,
                move |#args_binding: #args_struct| async move { #reply },
            )
        }
    }
}
