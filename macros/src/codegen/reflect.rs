//! The schemas for reflection: `Service::schema` for a service and `Reflect` for a
//! `#[wirecall::message]` type. Types are described by the runtime's `Reflect` impls, named
//! through the type as written (like `ProtoField`), so the schema follows the wire.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, Meta, Type};

use super::proto_impls::{FieldGen, VariantGen, VariantShape};
use super::ServiceGen;
use crate::crate_path::CratePath;
use crate::parse::ReplyShape;

/// The doc comment in `attrs`, as rustdoc shows it: one line per `///`, the leading space
/// removed, trimmed.
pub fn doc_string(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(meta) = &attr.meta {
            if meta.path.is_ident("doc") {
                if let Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) = &meta.value
                {
                    let text = text.value();
                    lines.push(text.strip_prefix(' ').unwrap_or(&text).to_owned());
                }
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// `{krate}::__private::reflect`, where the generated impls find the reflection API.
fn reflect_path(krate: &CratePath) -> TokenStream {
    quote!(#krate::__private::reflect)
}

/// `reflect::field::<T>("name", "doc", types)`, spanned at the type.
fn field_expr(reflect: &TokenStream, name: &str, ty: &Type, doc: &str) -> TokenStream {
    quote_spanned! {ty.span()=> #reflect::field::<#ty>(#name, #doc, types)}
}

fn type_expr(reflect: &TokenStream, ty: &Type) -> TokenStream {
    quote_spanned! {ty.span()=> #reflect::type_ref::<#ty>(types)}
}

/// `fn schema(&self)` of the generated `Service` impl.
pub fn service_schema(service: &ServiceGen<'_>) -> TokenStream {
    let reflect = reflect_path(&service.def.krate);
    let typed = service.def.protobuf();
    let doc = doc_string(&service.def.item.attrs);
    let methods = service.methods.iter().map(|method| {
        let def = method.def;
        let name = &def.wire_name;
        let id = &method.id;
        let doc = doc_string(&def.attrs);
        let oneway = def.oneway.is_some();
        let idempotent = def.idempotent.is_some();
        let policy = if oneway {
            let krate = &service.def.krate;
            quote!(#krate::__private::MethodPolicy::new())
        } else {
            def.policy
                .method_policy_expr(&service.def.policy, idempotent, &service.def.krate)
        };
        let args = method
            .arg_idents
            .iter()
            .zip(&method.arg_types)
            .map(|(ident, arg_ty)| {
                let arg_name = ident.to_string();
                let arg_name = arg_name.strip_prefix("r#").unwrap_or(&arg_name);
                if typed {
                    field_expr(&reflect, arg_name, arg_ty, "")
                } else {
                    let written = type_text(arg_ty);
                    quote!(#reflect::opaque_field(#arg_name, #written, ""))
                }
            });
        let ty = |ty: &Type| {
            if typed {
                type_expr(&reflect, ty)
            } else {
                let written = type_text(ty);
                quote!(#reflect::TypeRef::Opaque(::std::string::String::from(#written)))
            }
        };
        let reply = match def.reply.message() {
            ReplyShape::Unit => quote!(#reflect::ReplySchema::Unit),
            ReplyShape::Value(value) => {
                let value = ty(value);
                quote!(#reflect::ReplySchema::Value(#value))
            }
            ReplyShape::Result { ok, err, .. } => {
                let ok = match ok {
                    Some(ok) => {
                        let ok = ty(ok);
                        quote!(::core::option::Option::Some(#ok))
                    }
                    None => quote!(::core::option::Option::None),
                };
                let err = ty(err);
                quote!(#reflect::ReplySchema::Result { ok: #ok, err: #err })
            }
            // `message()` is never a stream.
            ReplyShape::Stream { .. } => quote!(#reflect::ReplySchema::Unit),
        };
        let server_stream = def.reply.is_stream();
        let upload = method.upload.as_ref().map(|upload| {
            let item = ty(upload.item);
            quote!(.with_upload(#item))
        });
        let cfg = &method.cfg_attrs;
        quote! {
            #(#cfg)*
            methods.push(#reflect::method(
                #name, #id, #doc, #oneway, #idempotent,
                ::std::vec![#(#args),*],
                #reply,
            ).with_policy(#policy).with_server_stream(#server_stream)#upload);
        }
    });
    quote! {
        fn schema(&self) -> #reflect::ServiceSchema {
            let mut registry = #reflect::TypeRegistry::new();
            let types = &mut registry;
            let mut methods = ::std::vec::Vec::new();
            #(#methods)*
            #reflect::service(&__DESCRIPTOR, #doc, methods, registry)
        }
    }
}

/// The Rust type as written, for services whose types have no schema.
fn type_text(ty: &Type) -> String {
    quote!(#ty)
        .to_string()
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
}

/// `impl Reflect` for a named type, whose `kind` expression builds its `TypeKind` with
/// `types` in scope.
fn reflect_impl(reflect: &TokenStream, ident: &Ident, doc: &str, kind: TokenStream) -> TokenStream {
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
    quote! {
        impl #reflect::Reflect for #ident {
            fn type_ref(types: &mut #reflect::TypeRegistry) -> #reflect::TypeRef {
                types.named::<Self>(
                    #name,
                    ::core::concat!(::core::module_path!(), "::", #name),
                    #doc,
                    |types| #kind,
                )
            }
        }
    }
}

/// `Reflect` for a `#[wirecall::message]` struct; `docs` are the fields' doc comments.
pub fn struct_reflect(
    krate: &CratePath,
    ident: &Ident,
    doc: &str,
    fields: &[FieldGen<'_>],
    docs: &[String],
) -> TokenStream {
    let reflect = &reflect_path(krate);
    let fields = fields.iter().zip(docs).map(|(field, doc)| {
        let name = member_name(&field.member);
        field_expr(reflect, &name, field.ty, doc)
    });
    reflect_impl(
        reflect,
        ident,
        doc,
        quote!(#reflect::TypeKind::Struct { fields: ::std::vec![#(#fields),*] }),
    )
}

/// `Reflect` for a unit-only enum: `(name, number, doc)` per variant.
pub fn unit_enum_reflect(
    krate: &CratePath,
    ident: &Ident,
    doc: &str,
    variants: &[(&Ident, i32, String)],
    other: Option<&Ident>,
) -> TokenStream {
    let reflect = &reflect_path(krate);
    let values = variants.iter().map(|(variant, number, doc)| {
        let name = variant.to_string();
        let is_other = other == Some(*variant);
        quote!(#reflect::enum_value(#name, #number, #doc, #is_other))
    });
    reflect_impl(
        reflect,
        ident,
        doc,
        quote!(#reflect::TypeKind::Enum { values: ::std::vec![#(#values),*] }),
    )
}

/// `Reflect` for an enum with data: each variant with its oneof field number and doc.
pub fn data_enum_reflect(
    krate: &CratePath,
    ident: &Ident,
    doc: &str,
    variants: &[(VariantGen<'_>, u32, String)],
    other: Option<&Ident>,
) -> TokenStream {
    let reflect = &reflect_path(krate);
    let variants = variants.iter().map(|(variant, tag, doc)| {
        let name = variant.ident.to_string();
        let is_other = other == Some(variant.ident);
        let shape = match &variant.shape {
            VariantShape::Unit => quote!(#reflect::VariantShape::Unit),
            VariantShape::Newtype(ty) => {
                let ty = type_expr(reflect, ty);
                quote!(#reflect::VariantShape::Newtype(#ty))
            }
            VariantShape::Fields { named, fields } => {
                let fields = fields
                    .iter()
                    .map(|field| field_expr(reflect, &member_name(&field.member), field.ty, ""));
                quote!(#reflect::VariantShape::Fields {
                    named: #named,
                    fields: ::std::vec![#(#fields),*],
                })
            }
        };
        quote!(#reflect::variant(#name, #tag, #doc, #is_other, #shape))
    });
    reflect_impl(
        reflect,
        ident,
        doc,
        quote!(#reflect::TypeKind::OneOf { variants: ::std::vec![#(#variants),*] }),
    )
}

fn member_name(member: &syn::Member) -> String {
    match member {
        syn::Member::Named(ident) => {
            let name = ident.to_string();
            name.strip_prefix("r#").unwrap_or(&name).to_owned()
        }
        syn::Member::Unnamed(index) => index.index.to_string(),
    }
}
