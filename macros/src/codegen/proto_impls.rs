//! The Protobuf side of a wire type: `Default`, prost's `Message` and wirecall's `ProtoField`
//! for structs (generated `Args`/`Reply` structs and `#[wirecall::message]` structs), and the
//! same for `#[wirecall::message]` enums.
//!
//! Each field type is named through `ProtoField` with the field type's own span, so a type
//! that cannot travel is reported on that type.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Member, Type};

use crate::crate_path::CratePath;

/// One field of a message: how to reach it and its type; tags are 1-based positions.
pub struct FieldGen<'a> {
    pub member: Member,
    pub ty: &'a Type,
}

/// `<T as ::wirecall::__private::proto::ProtoField>`, spanned at `ty`.
fn field_trait(krate: &CratePath, ty: &Type) -> TokenStream {
    quote_spanned! {ty.span()=> <#ty as #krate::__private::proto::ProtoField>}
}

fn tag_lit(tag: u32) -> TokenStream {
    let lit = proc_macro2::Literal::u32_suffixed(tag);
    quote!(#lit)
}

fn buf_mut(krate: &CratePath) -> TokenStream {
    quote!(impl #krate::__private::bytes::BufMut)
}

/// `merge_field`'s signature after `&mut self` (prost's and `VariantFields`' are the same).
fn merge_signature(krate: &CratePath, name: &str) -> TokenStream {
    let name = Ident::new(name, Span::call_site());
    quote! {
        fn #name(
            &mut self,
            tag: u32,
            wire_type: #krate::__private::prost::encoding::WireType,
            buf: &mut impl #krate::__private::bytes::Buf,
            ctx: #krate::__private::prost::encoding::DecodeContext,
        ) -> ::core::result::Result<(), #krate::__private::prost::DecodeError>
    }
}

/// A check that each type implements `ProtoField`, spanned at the type, placed before the
/// item so that "`T` cannot travel in a wirecall message" comes before serde's and `Debug`'s
/// complaints about the same type.
pub fn travel_checks<'a>(
    krate: &CratePath,
    types: impl IntoIterator<Item = &'a Type>,
) -> TokenStream {
    let checks = types.into_iter().map(|ty| {
        let field = field_trait(krate, ty);
        quote_spanned! {ty.span()=> let _ = #field::proto_default; }
    });
    quote! {
        #[allow(clippy::all)]
        const _: () = {
            fn __wirecall_travel_checks() {
                #(#checks)*
            }
        };
    }
}

/// `Default`, `Message` and `ProtoField` for a struct with named fields.
pub fn struct_impls(krate: &CratePath, ident: &Ident, fields: &[FieldGen<'_>]) -> TokenStream {
    let members: Vec<&Member> = fields.iter().map(|field| &field.member).collect();
    let traits: Vec<TokenStream> = fields
        .iter()
        .map(|field| field_trait(krate, field.ty))
        .collect();
    let tags: Vec<TokenStream> = (1u32..).take(fields.len()).map(tag_lit).collect();
    let buf_mut = buf_mut(krate);
    let merge_signature = merge_signature(krate, "merge_field");
    let serde_fields = serde_fields(krate, ident, fields);
    quote! {
        impl ::core::default::Default for #ident {
            fn default() -> Self {
                Self { #(#members: #traits::proto_default(),)* }
            }
        }

        impl #krate::__private::prost::Message for #ident {
            fn encode_raw(&self, buf: &mut #buf_mut) {
                #(#traits::encode_field(&self.#members, #tags, buf);)*
                let _ = buf;
            }
            #merge_signature {
                match tag {
                    #(#tags => #traits::merge_field(&mut self.#members, wire_type, buf, ctx),)*
                    _ => #krate::__private::prost::encoding::skip_field(wire_type, tag, buf, ctx),
                }
            }
            fn encoded_len(&self) -> usize {
                0 #(+ #traits::field_len(&self.#members, #tags))*
            }
            fn clear(&mut self) {
                *self = <Self as ::core::default::Default>::default();
            }
        }

        #krate::__private::proto_message_field!(#ident, <#ident as ::core::default::Default>::default());

        #serde_fields
    }
}

/// `SerdeFields` and `Deserialize` for a struct: serde formats read it through the runtime,
/// which tolerates missing and extra trailing fields (see `codec/evolve.rs`).
fn serde_fields(krate: &CratePath, ident: &Ident, fields: &[FieldGen<'_>]) -> TokenStream {
    let name = ident.to_string();
    let names: Vec<String> = fields
        .iter()
        .map(|field| match &field.member {
            Member::Named(ident) => ident.unraw().to_string(),
            Member::Unnamed(index) => index.index.to_string(),
        })
        .collect();
    let arms = fields.iter().enumerate().map(|(index, field)| {
        let member = &field.member;
        let ty = field.ty;
        let read = if crate::proto_type::is_nested_option(ty) {
            quote!(#krate::__private::proto::nested_option::deserialize(deserializer)?)
        } else {
            quote_spanned!(ty.span()=> <#ty as #krate::__private::proto::ProtoField>::deserialize_shared(deserializer)?)
        };
        quote! {
            #index => {
                self.#member = #read;
                ::core::result::Result::Ok(())
            }
        }
    });
    // Each field is read into a local, as serde's derive does; once the array runs out, the
    // remaining fields take their defaults without reading.
    let locals: Vec<Ident> = (0..fields.len())
        .map(|index| format_ident!("__field{}", index, span = Span::call_site()))
        .collect();
    let seq_reads = fields.iter().zip(&locals).map(|(field, local)| {
        let ty = field.ty;
        let nested = crate::proto_type::is_nested_option(ty);
        // Spanned at the type, so that a type that cannot travel is reported on the field.
        let (next, unwrap) = if nested {
            (
                quote!(#krate::__private::serde::de::SeqAccess::next_element::<#krate::__private::evolve::NestedOption<_>>(seq)?),
                quote!(.0),
            )
        } else {
            (
                quote_spanned!(ty.span()=> <A as #krate::__private::serde::de::SeqAccess<'de>>::next_element_seed(seq, <#krate::__private::evolve::FieldValue<#ty>>::new())?),
                quote!(),
            )
        };
        let default = field_trait(krate, ty);
        quote! {
            let #local: #ty = if __ended {
                #default::proto_default()
            } else {
                match #next {
                    ::core::option::Option::Some(__value) => __value #unwrap,
                    ::core::option::Option::None => {
                        __ended = true;
                        #default::proto_default()
                    }
                }
            };
        }
    });
    let members: Vec<&Member> = fields.iter().map(|field| &field.member).collect();
    let ended = if fields.is_empty() {
        quote!(let __ended = false;)
    } else {
        quote!(let mut __ended = false;)
    };
    quote! {
        impl #krate::__private::SerdeFields for #ident {
            const NAME: &'static str = #name;
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            fn deserialize_field<'de, D: #krate::__private::serde::Deserializer<'de>>(
                &mut self,
                index: usize,
                deserializer: D,
            ) -> ::core::result::Result<(), D::Error> {
                match index {
                    #(#arms)*
                    _ => ::core::result::Result::map(
                        <#krate::__private::serde::de::IgnoredAny as #krate::__private::serde::Deserialize<'de>>::deserialize(deserializer),
                        |_| (),
                    ),
                }
            }
            fn deserialize_seq<'de, A: #krate::__private::serde::de::SeqAccess<'de>>(
                seq: &mut A,
            ) -> ::core::result::Result<Self, A::Error> {
                #ended
                #(#seq_reads)*
                if !__ended {
                    #krate::__private::evolve::skip_rest(seq)?;
                }
                ::core::result::Result::Ok(Self { #(#members: #locals),* })
            }
        }

        #krate::__private::serde_message!(#ident);
    }
}

/// One variant of a `#[wirecall::message]` enum.
pub struct VariantGen<'a> {
    pub ident: &'a Ident,
    pub shape: VariantShape<'a>,
}

/// What a variant carries.
pub enum VariantShape<'a> {
    /// `A`.
    Unit,
    /// `A(T)`: the oneof field holds `T` itself.
    Newtype(&'a Type),
    /// `A(T, U)` or `A { t: T, u: U }`: the oneof field holds a message with fields 1..n.
    Fields {
        named: bool,
        fields: Vec<FieldGen<'a>>,
    },
}

impl VariantGen<'_> {
    /// `Self::A`, `Self::A(__f0)`, `Self::A { t, u }` binding every field.
    fn pattern(&self) -> TokenStream {
        let ident = self.ident;
        match &self.shape {
            VariantShape::Unit => quote!(Self::#ident),
            VariantShape::Newtype(_) => quote!(Self::#ident(__f0)),
            VariantShape::Fields { named, fields } => {
                let bindings = bindings(fields);
                if *named {
                    let members = fields.iter().map(|field| &field.member);
                    quote!(Self::#ident { #(#members: #bindings),* })
                } else {
                    quote!(Self::#ident(#(#bindings),*))
                }
            }
        }
    }

    /// The variant with every field at its protobuf default.
    fn default_value(&self, krate: &CratePath, enum_ident: &Ident) -> TokenStream {
        let ident = self.ident;
        match &self.shape {
            VariantShape::Unit => quote!(#enum_ident::#ident),
            VariantShape::Newtype(ty) => {
                let field = field_trait(krate, ty);
                quote!(#enum_ident::#ident(#field::proto_default()))
            }
            VariantShape::Fields { named, fields } => {
                let defaults = fields.iter().map(|field| {
                    let field_trait = field_trait(krate, field.ty);
                    quote!(#field_trait::proto_default())
                });
                if *named {
                    let members = fields.iter().map(|field| &field.member);
                    quote!(#enum_ident::#ident { #(#members: #defaults),* })
                } else {
                    quote!(#enum_ident::#ident(#(#defaults),*))
                }
            }
        }
    }
}

fn bindings(fields: &[FieldGen<'_>]) -> Vec<Ident> {
    (0..fields.len())
        .map(|index| format_ident!("__f{}", index, span = Span::call_site()))
        .collect()
}

/// The field number of an enum's `#[wirecall(other)]` variant: protobuf's largest.
const CATCH_ALL_FIELD: u32 = (1 << 29) - 1;

/// The oneof field number of each variant: 1, 2, ... in order, and [`CATCH_ALL_FIELD`] for
/// the catch-all. The catch-all is last in the source (serde's rule), so variants added later
/// go before it; it takes the largest field number to keep every other number stable.
pub fn variant_tags(variants: &[VariantGen<'_>], other: Option<&Ident>) -> Vec<u32> {
    let mut position = 0u32;
    variants
        .iter()
        .map(|variant| {
            if other == Some(variant.ident) {
                CATCH_ALL_FIELD
            } else {
                position += 1;
                position
            }
        })
        .collect()
}

/// `Message` (the oneof wrapper: variant `i` is field `i + 1`), `VariantFields` and
/// `ProtoField` for an enum with data. `other` is the catch-all variant, if any.
pub fn data_enum_impls(
    krate: &CratePath,
    ident: &Ident,
    variants: &[VariantGen<'_>],
    other: Option<&Ident>,
) -> TokenStream {
    let buf_mut = buf_mut(krate);
    let variant_signature = merge_signature(krate, "merge_variant_field");
    let merge_signature = merge_signature(krate, "merge_field");
    let mut encode_arms = Vec::new();
    let mut len_arms = Vec::new();
    let mut merge_arms = Vec::new();
    let mut field_arms = Vec::new();
    for (variant, tag) in variants.iter().zip(variant_tags(variants, other)) {
        let tag = tag_lit(tag);
        let pattern = variant.pattern();
        let name = variant.ident;
        let default = variant.default_value(krate, ident);
        match &variant.shape {
            VariantShape::Unit => {
                encode_arms.push(quote! {
                    #pattern => #krate::__private::proto::encode_header(#tag, 0, buf),
                });
                len_arms.push(quote! {
                    #pattern => #krate::__private::proto::header_len(#tag, 0),
                });
                merge_arms.push(quote! {
                    #tag => {
                        *self = #default;
                        #krate::__private::proto::merge_empty(wire_type, tag, buf, ctx)
                    }
                });
            }
            VariantShape::Newtype(ty) => {
                let field = field_trait(krate, ty);
                encode_arms.push(quote! {
                    #pattern => #field::encode_value(__f0, #tag, buf),
                });
                len_arms.push(quote! {
                    #pattern => #field::value_len(__f0, #tag),
                });
                merge_arms.push(quote! {
                    #tag => {
                        if !::core::matches!(self, Self::#name(..)) {
                            *self = #default;
                        }
                        match self {
                            #pattern => #field::merge_value(__f0, wire_type, buf, ctx),
                            _ => ::core::result::Result::Ok(()),
                        }
                    }
                });
            }
            VariantShape::Fields { named, fields } => {
                let traits: Vec<TokenStream> = fields
                    .iter()
                    .map(|field| field_trait(krate, field.ty))
                    .collect();
                let tags: Vec<TokenStream> = (1u32..).take(fields.len()).map(tag_lit).collect();
                let bindings = bindings(fields);
                let body_len = quote!(0 #(+ #traits::field_len(#bindings, #tags))*);
                encode_arms.push(quote! {
                    #pattern => {
                        #krate::__private::proto::encode_header(#tag, #body_len, buf);
                        #(#traits::encode_field(#bindings, #tags, buf);)*
                    }
                });
                len_arms.push(quote! {
                    #pattern => #krate::__private::proto::header_len(#tag, #body_len),
                });
                let matches = if *named {
                    quote!(Self::#name { .. })
                } else {
                    quote!(Self::#name(..))
                };
                merge_arms.push(quote! {
                    #tag => {
                        if !::core::matches!(self, #matches) {
                            *self = #default;
                        }
                        #krate::__private::proto::merge_variant(self, wire_type, buf, ctx)
                    }
                });
                field_arms.push(quote! {
                    #pattern => match tag {
                        #(#tags => #traits::merge_field(#bindings, wire_type, buf, ctx),)*
                        _ => #krate::__private::prost::encoding::skip_field(wire_type, tag, buf, ctx),
                    },
                });
            }
        }
    }
    let name = ident.to_string();
    let unknown = match other {
        Some(other) => quote! {
            _ => {
                *self = Self::#other;
                #krate::__private::prost::encoding::skip_field(wire_type, tag, buf, ctx)
            }
        },
        None => quote! {
            _ => ::core::result::Result::Err(
                #krate::__private::proto::unknown_variant(#name, tag),
            ),
        },
    };
    let default = match variants.first() {
        Some(first) => first.default_value(krate, ident),
        None => quote!(::core::unreachable!()),
    };
    quote! {
        impl #krate::__private::prost::Message for #ident {
            fn encode_raw(&self, buf: &mut #buf_mut) {
                match self {
                    #(#encode_arms)*
                }
            }
            #merge_signature {
                match tag {
                    #(#merge_arms)*
                    #unknown
                }
            }
            fn encoded_len(&self) -> usize {
                match self {
                    #(#len_arms)*
                }
            }
            fn clear(&mut self) {
                *self = #default;
            }
        }

        impl #krate::__private::proto::VariantFields for #ident {
            #variant_signature {
                #[allow(unreachable_patterns)]
                match self {
                    #(#field_arms)*
                    _ => #krate::__private::prost::encoding::skip_field(wire_type, tag, buf, ctx),
                }
            }
        }

        #krate::__private::proto_message_field!(#ident, #default);
    }
}

/// `UnitEnum` (names and numbers), then `ProtoField` and the serde impls through the runtime.
pub fn unit_enum_impls(
    krate: &CratePath,
    ident: &Ident,
    variants: &[(&Ident, i32)],
    zero: &Ident,
    other: Option<&Ident>,
) -> TokenStream {
    let name = ident.to_string();
    let idents: Vec<&Ident> = variants.iter().map(|(ident, _)| *ident).collect();
    let numbers: Vec<proc_macro2::Literal> = variants
        .iter()
        .map(|(_, number)| proc_macro2::Literal::i32_unsuffixed(*number))
        .collect();
    let names: Vec<String> = idents.iter().map(|ident| ident.to_string()).collect();
    let fallback = match other {
        Some(other) => quote!(::core::option::Option::Some(Self::#other)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        impl #krate::__private::proto::UnitEnum for #ident {
            const NAME: &'static str = #name;
            const VARIANTS: &'static [&'static str] = &[#(#names),*];
            fn first() -> Self {
                Self::#zero
            }
            fn number(&self) -> i32 {
                match self {
                    #(Self::#idents => #numbers,)*
                }
            }
            fn name(&self) -> &'static str {
                match self {
                    #(Self::#idents => #names,)*
                }
            }
            fn from_number(number: i32) -> ::core::option::Option<Self> {
                match number {
                    #(#numbers => ::core::option::Option::Some(Self::#idents),)*
                    _ => #fallback,
                }
            }
            fn from_name(name: &str) -> ::core::option::Option<Self> {
                match name {
                    #(#names => ::core::option::Option::Some(Self::#idents),)*
                    _ => #fallback,
                }
            }
        }

        #krate::__private::proto_unit_enum!(#ident);
    }
}
