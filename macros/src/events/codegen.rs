//! Code generation for `#[wirecall::events]`: the rewritten trait (the service macro's), the
//! per-event argument structs (the service macro's `Args`), `{Trait}Publisher` and
//! `{Trait}Subscriber<S>`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::parse::EventsDef;
use crate::codegen::{self, messages, MethodGen, ServiceGen};
use crate::parse::CodecName;

/// Generates the full expansion of a validated contract.
pub fn expand(contract: &EventsDef) -> syn::Result<TokenStream> {
    let def = &contract.def;
    let service = codegen::service_gen(def)?;
    let publisher = format_ident!("{}Publisher", def.item.ident);
    let subscriber = format_ident!("{}Subscriber", def.item.ident);
    let contract_trait = codegen::service_trait(def);
    let structs = structs(&service, &publisher, &subscriber);
    let args = messages::args_messages(&service);
    let publisher_impl = publisher_impl(&service, &publisher);
    let subscriber_impls = subscriber_impls(&service, &publisher, &subscriber);
    Ok(quote! {
        #contract_trait
        #structs

        // Helpers live in an anonymous const so their names cannot clash with the user's.
        #[allow(clippy::all, clippy::pedantic, clippy::nursery, dead_code, deprecated, non_camel_case_types, unused_qualifications)]
        const _: () = {
            #args
            #publisher_impl
            #subscriber_impls
        };
    })
}

fn structs(
    service: &ServiceGen<'_>,
    publisher: &syn::Ident,
    subscriber: &syn::Ident,
) -> TokenStream {
    let krate = &service.def.krate;
    let vis = &service.def.item.vis;
    let trait_ident = &service.def.item.ident;
    let publisher_doc = format!(
        " Publishes the events of [`{trait_ident}`]: one method per event, each resolving once \
         the bus holds the event (on RabbitMQ: once the broker confirmed it)."
    );
    let subscriber_doc = format!(
        " Hands the events of [`{trait_ident}`] to an implementation; pass it to \
         `wirecall::events::EventBus::subscribe`."
    );
    let subscriber_name = subscriber.to_string();
    quote! {
        #[doc = #publisher_doc]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        #vis struct #publisher {
            bus: #krate::events::EventBus,
            codec: #krate::Codec,
            metadata: #krate::Metadata,
        }

        #[doc = #subscriber_doc]
        #vis struct #subscriber<S> {
            inner: #krate::__private::Arc<S>,
        }

        // Written by hand: a derive would require `S: Clone`, but clones only share the `Arc`.
        impl<__S> ::core::clone::Clone for #subscriber<__S> {
            fn clone(&self) -> Self {
                Self {
                    inner: ::core::clone::Clone::clone(&self.inner),
                }
            }
        }

        impl<__S> ::core::fmt::Debug for #subscriber<__S> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Formatter::debug_struct(f, #subscriber_name).finish_non_exhaustive()
            }
        }
    }
}

fn publisher_impl(service: &ServiceGen<'_>, publisher: &syn::Ident) -> TokenStream {
    let krate = &service.def.krate;
    let wire_name = &service.def.wire_name;
    let cfg_names = service.methods.iter().map(|method| {
        let cfg = &method.cfg_attrs;
        let name = &method.def.wire_name;
        quote!(#(#cfg)* #name)
    });
    let default_codec = match service.def.codecs.first() {
        Some(CodecName::Json) => quote!(#krate::Codec::Json),
        Some(CodecName::Protobuf) => quote!(#krate::Codec::Protobuf),
        Some(CodecName::MessagePack) | None => quote!(#krate::Codec::MessagePack),
    };
    let methods = service
        .methods
        .iter()
        .map(|method| publish_method(service, method));
    quote! {
        impl #publisher {
            /// The contract: its name (the exchange) and its events (the routing keys), for
            /// `EventBus::declare` and `EventBus::take_dead_letters`.
            pub const CONTRACT: &'static #krate::events::ContractDescriptor =
                &#krate::events::ContractDescriptor {
                    name: #wire_name,
                    events: &[#(#cfg_names),*],
                };

            /// A publisher on `bus`, encoding with the contract's first codec (MessagePack
            /// unless `codecs(...)` says otherwise).
            pub fn new(bus: &#krate::events::EventBus) -> Self {
                Self {
                    bus: ::core::clone::Clone::clone(bus),
                    codec: #default_codec,
                    metadata: ::core::default::Default::default(),
                }
            }

            /// Encodes events with `codec`; consumers read the codec from each message.
            pub fn with_codec(mut self, codec: #krate::Codec) -> Self {
                self.codec = codec;
                self
            }

            /// Sends `metadata` with every event (handlers read it from
            /// `EventContext::current()`).
            pub fn with_metadata(mut self, metadata: #krate::Metadata) -> Self {
                self.metadata = metadata;
                self
            }

            /// The bus this publishes on.
            pub fn bus(&self) -> &#krate::events::EventBus {
                &self.bus
            }

            /// The codec events are encoded with.
            pub fn codec(&self) -> #krate::Codec {
                self.codec
            }

            #(#methods)*
        }
    }
}

fn publish_method(service: &ServiceGen<'_>, method: &MethodGen<'_>) -> TokenStream {
    let krate = &service.def.krate;
    let ident = &method.def.sig.ident;
    let name = &method.def.wire_name;
    let docs = codegen::doc_attrs(method.def);
    let attrs = codegen::client_attrs(method.def);
    let messages = &method.messages;
    let args = method.args_tuple();
    let arg_idents = &method.arg_idents;
    let arg_types = &method.arg_types;
    // Spanned at the event: a type of its that cannot travel is reported there.
    let wirecall = krate.at(ident.span());
    let publish = quote_spanned! {ident.span()=>
        #wirecall::__private::events::publish::<#messages>(
            &self.bus,
            Self::CONTRACT,
            #name,
            self.codec,
            &self.metadata,
            #args,
        )
        .await
    };
    quote! {
        #(#docs)*
        #(#attrs)*
        pub async fn #ident(&self, #(#arg_idents: #arg_types),*)
            -> ::core::result::Result<(), #krate::events::PublishError>
        {
            #publish
        }
    }
}

fn subscriber_impls(
    service: &ServiceGen<'_>,
    publisher: &syn::Ident,
    subscriber: &syn::Ident,
) -> TokenStream {
    let krate = &service.def.krate;
    let trait_ident = &service.def.item.ident;
    let arms = service.methods.iter().map(|method| {
        let ident = &method.def.sig.ident;
        let name = &method.def.wire_name;
        let messages = &method.messages;
        let args = method.args_tuple();
        let call_args = &method.arg_idents;
        // Spanned at the event: a type of its that cannot travel is reported there.
        let wirecall = krate.at(ident.span());
        let handle = quote_spanned! {ident.span()=>
            #wirecall::__private::events::handle_event::<#messages, _, _>(
                __codec,
                __payload,
                move |#args| async move {
                    <__S as #trait_ident>::#ident(&*__inner, #(#call_args),*).await
                },
            )
        };
        let cfg = &method.cfg_attrs;
        quote! {
            #(#cfg)*
            #name => {
                let __inner = ::core::clone::Clone::clone(&self.inner);
                #handle
            }
        }
    });
    quote! {
        impl<__S: #trait_ident> #subscriber<__S> {
            /// Wraps an implementation.
            pub fn new(handler: __S) -> Self {
                Self {
                    inner: #krate::__private::Arc::new(handler),
                }
            }

            /// Wraps a shared implementation.
            pub fn from_arc(handler: #krate::__private::Arc<__S>) -> Self {
                Self { inner: handler }
            }
        }

        impl<__S: #trait_ident> #krate::events::EventHandler for #subscriber<__S> {
            fn contract(&self) -> &'static #krate::events::ContractDescriptor {
                #publisher::CONTRACT
            }

            fn handle(
                &self,
                __event: &::core::primitive::str,
                __codec: #krate::Codec,
                __payload: #krate::__private::Bytes,
            ) -> #krate::events::HandlerFuture {
                match __event {
                    #(#arms)*
                    _ => #krate::__private::events::unknown_event(__event),
                }
            }
        }
    }
}
