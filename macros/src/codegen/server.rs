//! The server side: `{Trait}Server<S>`, the service descriptor, and the `wirecall::Service`
//! impl whose `call` is one `match` on the method id, each arm handing the handler to the
//! runtime's helper for the method's shape (`wirecall::__private::handler`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::{MethodGen, ServiceGen};

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
        .map(|method| call_arm(service, method));
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
                __upload: #krate::stream::Upload,
            ) -> #krate::ReplyFuture {
                match #krate::MethodId::get(__method) {
                    #(#arms)*
                    _ => #krate::__private::handler::unknown_method(__method),
                }
            }

            #schema
        }
    }
}

/// The arm of `call` for one method: the runtime's helper for its shape, with the handler, a
/// closure that takes the arguments (and the upload, if any) and calls the implementation.
/// A stream call's handler returns its items (or, for a client-streaming method, its one
/// reply, which travels as the server's only item).
fn call_arm(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let trait_ident = &service.def.item.ident;
    let ident = &method.def.sig.ident;
    let id = &method.id;
    let messages = &method.messages;
    let args = method.args_tuple();
    let call_args = method.call_args();
    // Fully qualified so that a method named like an `Arc` method (`clone`, ...) still calls
    // the user's implementation.
    let call = quote!(<__S as #trait_ident>::#ident(&*__inner, #(#call_args),*).await);
    // The helper's call is spanned at the method: a type of its that cannot travel is
    // reported there (rustc reports an expression at its first token, the crate path).
    let span = ident.span();
    let wirecall = krate.at(span);
    let serve = match (&method.upload, method.def.reply.is_stream()) {
        (None, false) => quote_spanned! {span=>
            #wirecall::__private::handler::unary::<#messages, _, _>(__codec, __payload, move |#args| async move { #call })
        },
        (None, true) => quote_spanned! {span=>
            #wirecall::__private::handler::server_stream::<#messages, _, _>(__codec, __payload, move |#args| async move { #call })
        },
        (Some(_), bidirectional) => {
            let helper = if bidirectional {
                quote!(bidi_stream)
            } else {
                quote!(client_stream)
            };
            quote_spanned! {span=>
                #wirecall::__private::handler::#helper::<#messages, _, _>(
                    __codec,
                    __payload,
                    __upload,
                    move |#args, __upload| async move { #call },
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
