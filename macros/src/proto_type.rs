//! The mapping from Rust types to protobuf field kinds, shared by service arguments, replies
//! and `#[wirecall::message]` fields.
//!
//! The mapping works on the written type's last path segment (`String`, `Vec`, `HashMap`, ...)
//! because a macro cannot resolve paths. It produces the `#[prost(...)]` attribute that
//! prost's derive reads; anything protobuf cannot carry is a spanned error that says what to
//! write instead.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{GenericArgument, PathArguments, Type, TypePath};

/// One value that protobuf encodes on its own: a scalar, a string, bytes or a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Singular {
    /// A scalar or string, named as prost names it (`uint64`, `string`, ...).
    Scalar(&'static str),
    /// `Vec<u8>`.
    BytesVec,
    /// `bytes::Bytes`.
    BytesBytes,
    /// Any other path: a type that implements `prost::Message`.
    Message,
}

/// The protobuf shape of one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A plain `T`.
    Single(Singular),
    /// `Option<T>`.
    Optional(Singular),
    /// `Vec<T>`.
    Repeated(Singular),
    /// `HashMap<K, V>` (`btree == false`) or `BTreeMap<K, V>`.
    Map {
        btree: bool,
        key: &'static str,
        value: Singular,
    },
}

/// Where a result's list or map is refused, the message says how to carry it.
const RESULT_NEEDS_SINGULAR: &str =
    "protobuf cannot carry a list or map directly inside a result; \
     wrap it in a #[wirecall::message] struct";

impl FieldType {
    /// The contents of the `#[prost(...)]` attribute for this field with `tag`.
    pub fn prost_attr(&self, tag: u32) -> TokenStream {
        let tag = tag.to_string();
        match *self {
            FieldType::Single(Singular::Message) => quote!(message, required, tag = #tag),
            FieldType::Single(kind) => {
                let kind = kind_tokens(kind);
                quote!(#kind, tag = #tag)
            }
            FieldType::Optional(kind) => {
                let kind = kind_tokens(kind);
                quote!(#kind, optional, tag = #tag)
            }
            FieldType::Repeated(kind) => {
                let kind = kind_tokens(kind);
                quote!(#kind, repeated, tag = #tag)
            }
            FieldType::Map { btree, key, value } => {
                let value = match value {
                    Singular::Scalar(name) => name,
                    // Map values are only ever `Vec<u8>` (checked in `map_value`).
                    Singular::BytesVec | Singular::BytesBytes => "bytes",
                    Singular::Message => "message",
                };
                let types = format!("{key}, {value}");
                if btree {
                    quote!(btree_map = #types, tag = #tag)
                } else {
                    quote!(map = #types, tag = #tag)
                }
            }
        }
    }
}

fn kind_tokens(kind: Singular) -> TokenStream {
    match kind {
        Singular::Scalar(name) => {
            let ident = syn::Ident::new(name, Span::call_site());
            quote!(#ident)
        }
        Singular::BytesVec => quote!(bytes = "vec"),
        Singular::BytesBytes => quote!(bytes = "bytes"),
        Singular::Message => quote!(message),
    }
}

/// Maps a field, argument or reply type.
pub fn field_type(ty: &Type) -> syn::Result<FieldType> {
    let ty = strip_groups(ty);
    let path = type_path(ty)?;
    let (name, args) = last_segment(path)?;
    // Without type arguments, `Vec`, `Option`, ... are the user's own types (hence messages).
    if args.is_empty() {
        return Ok(FieldType::Single(singular(ty)?));
    }
    match name.as_str() {
        "Vec" => {
            let inner = single_arg(ty, args, "Vec")?;
            if is_u8(inner) {
                return Ok(FieldType::Single(Singular::BytesVec));
            }
            let inner_path = type_path(strip_groups(inner))?;
            let (inner_name, inner_args) = last_segment(inner_path)?;
            if inner_args.is_empty() {
                return Ok(FieldType::Repeated(singular(inner)?));
            }
            match inner_name.as_str() {
                "Vec" => {
                    let innermost = single_arg(inner, inner_args, "Vec")?;
                    if is_u8(innermost) {
                        Ok(FieldType::Repeated(Singular::BytesVec))
                    } else {
                        Err(syn::Error::new_spanned(
                            ty,
                            "protobuf has no nested lists; wrap the inner list in a \
                             #[wirecall::message] struct and use `Vec<ThatStruct>`",
                        ))
                    }
                }
                "Option" => Err(syn::Error::new_spanned(
                    ty,
                    "protobuf lists cannot hold missing items; use `Vec<T>`, or wrap the \
                     optional value in a #[wirecall::message] struct",
                )),
                "HashMap" | "BTreeMap" => Err(syn::Error::new_spanned(
                    ty,
                    "protobuf has no list of maps; wrap the map in a #[wirecall::message] struct",
                )),
                _ => Ok(FieldType::Repeated(singular(inner)?)),
            }
        }
        "Option" => {
            let inner = single_arg(ty, args, "Option")?;
            let inner_path = type_path(strip_groups(inner))?;
            let (inner_name, inner_args) = last_segment(inner_path)?;
            if inner_args.is_empty() {
                return Ok(FieldType::Optional(singular(inner)?));
            }
            match inner_name.as_str() {
                "Vec" if !is_vec_u8(inner) => Err(syn::Error::new_spanned(
                    ty,
                    "protobuf cannot tell `None` from an empty list; use `Vec<T>` \
                     (an empty list means none)",
                )),
                "HashMap" | "BTreeMap" => Err(syn::Error::new_spanned(
                    ty,
                    "protobuf cannot tell `None` from an empty map; use the map type directly",
                )),
                "Option" => Err(syn::Error::new_spanned(
                    ty,
                    "protobuf has no nested optionals; use a single `Option<T>`",
                )),
                _ => Ok(FieldType::Optional(singular(inner)?)),
            }
        }
        "HashMap" | "BTreeMap" => {
            let (key, value) = two_args(ty, args, &name)?;
            Ok(FieldType::Map {
                btree: name == "BTreeMap",
                key: map_key(key)?,
                value: map_value(value)?,
            })
        }
        _ => Ok(FieldType::Single(singular(ty)?)),
    }
}

/// Maps one side of a `Result<T, E>` return: it must be a single value.
pub fn result_side(ty: &Type) -> syn::Result<Singular> {
    match field_type(ty)? {
        FieldType::Single(kind) => Ok(kind),
        FieldType::Optional(_) | FieldType::Repeated(_) | FieldType::Map { .. } => {
            Err(syn::Error::new_spanned(ty, RESULT_NEEDS_SINGULAR))
        }
    }
}

/// A type that encodes as one protobuf value.
fn singular(ty: &Type) -> syn::Result<Singular> {
    let ty = strip_groups(ty);
    if is_vec_u8(ty) {
        return Ok(Singular::BytesVec);
    }
    let path = type_path(ty)?;
    let (name, args) = last_segment(path)?;
    if let Some(kind) = scalar(&name) {
        if path.path.segments.len() == 1 && !args.is_empty() {
            return Err(syn::Error::new_spanned(ty, "unexpected generic arguments"));
        }
        return Ok(Singular::Scalar(kind));
    }
    if let Some(message) = refused_primitive(&name) {
        return Err(syn::Error::new_spanned(ty, message));
    }
    match name.as_str() {
        "Bytes" if args.is_empty() => Ok(Singular::BytesBytes),
        "Vec" | "Option" | "HashMap" | "BTreeMap" if !args.is_empty() => {
            Err(syn::Error::new_spanned(
                ty,
                "protobuf cannot nest lists, maps or optionals here; wrap the inner value in a \
             #[wirecall::message] struct",
            ))
        }
        "HashSet" | "BTreeSet" | "VecDeque" | "LinkedList" | "BinaryHeap" if !args.is_empty() => {
            Err(syn::Error::new_spanned(
                ty,
                format!("protobuf lists map to `Vec<T>`; use `Vec<T>` instead of `{name}`"),
            ))
        }
        "Box" | "Rc" | "Arc" | "Cow" if !args.is_empty() => Err(syn::Error::new_spanned(
            ty,
            format!("`{name}` cannot be a protobuf field; use the owned type itself"),
        )),
        _ if !args.is_empty() => Err(syn::Error::new_spanned(
            ty,
            "generic types cannot be protobuf fields; use a concrete #[wirecall::message] struct",
        )),
        _ => Ok(Singular::Message),
    }
}

fn map_key(ty: &Type) -> syn::Result<&'static str> {
    match singular(ty)? {
        Singular::Scalar(kind) if kind != "float" && kind != "double" => Ok(kind),
        _ => Err(syn::Error::new_spanned(
            ty,
            "protobuf map keys must be integers, `bool` or `String`",
        )),
    }
}

fn map_value(ty: &Type) -> syn::Result<Singular> {
    match singular(ty)? {
        // prost's map fields only support `Vec<u8>` for bytes values.
        Singular::BytesBytes => Err(syn::Error::new_spanned(
            ty,
            "protobuf map values of bytes must be `Vec<u8>`",
        )),
        kind => Ok(kind),
    }
}

/// The prost name of a scalar or string type.
fn scalar(name: &str) -> Option<&'static str> {
    Some(match name {
        "bool" => "bool",
        "u32" => "uint32",
        "u64" => "uint64",
        "i32" => "int32",
        "i64" => "int64",
        "f32" => "float",
        "f64" => "double",
        "String" => "string",
        _ => return None,
    })
}

/// Primitive types with no protobuf counterpart, with what to write instead.
fn refused_primitive(name: &str) -> Option<&'static str> {
    Some(match name {
        "u8" => "protobuf has no 8-bit integers; use `u32` (or `Vec<u8>` for bytes)",
        "i8" => "protobuf has no 8-bit integers; use `i32`",
        "u16" => "protobuf has no 16-bit integers; use `u32`",
        "i16" => "protobuf has no 16-bit integers; use `i32`",
        "u128" => "protobuf has no 128-bit integers; use two `u64` fields or `Vec<u8>`",
        "i128" => "protobuf has no 128-bit integers; use two `i64` fields or `Vec<u8>`",
        "usize" => "`usize` has no fixed width on the wire; use `u64`",
        "isize" => "`isize` has no fixed width on the wire; use `i64`",
        "char" => "protobuf has no character type; use `String` or `u32`",
        "str" => "use `String`",
        _ => return None,
    })
}

/// `macro_rules!` expansions wrap types in invisible groups; look through them and parens.
fn strip_groups(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

fn type_path(ty: &Type) -> syn::Result<&TypePath> {
    let message = match ty {
        Type::Path(path) if path.qself.is_none() => return Ok(path),
        Type::Path(_) => {
            "qualified paths (`<T as Trait>::Assoc`) cannot be mapped to protobuf; \
                          name the type directly"
        }
        Type::Reference(reference) => {
            return Err(syn::Error::new_spanned(
                ty,
                reference_message(&reference.elem),
            ))
        }
        Type::Tuple(tuple) if tuple.elems.is_empty() => {
            "`()` carries nothing; remove it, or use `bool` / a #[wirecall::message] struct"
        }
        Type::Tuple(_) => {
            "protobuf has no tuples; use a #[wirecall::message] struct with named fields"
        }
        Type::Array(_) | Type::Slice(_) => "protobuf has no fixed-size arrays; use `Vec<T>`",
        Type::ImplTrait(_) => "`impl Trait` cannot cross the wire; take a concrete type",
        Type::TraitObject(_) => "trait objects cannot cross the wire; take a concrete type",
        Type::Ptr(_) => "raw pointers cannot cross the wire; take an owned type",
        Type::BareFn(_) => "functions cannot cross the wire; take data instead",
        Type::Never(_) => "`!` cannot cross the wire; return `()` instead",
        Type::Infer(_) => "write the type out; `_` cannot be mapped to protobuf",
        _ => {
            "this type cannot be mapped to protobuf; use a scalar, `String`, `Vec<T>`, \
              `Option<T>`, a map or a #[wirecall::message] struct"
        }
    };
    Err(syn::Error::new_spanned(ty, message))
}

/// What to take instead of a reference: `&str` -> `String`, `&[T]` -> `Vec<T>`, `&T` -> `T`.
pub fn reference_message(elem: &Type) -> String {
    match strip_groups(elem) {
        Type::Path(path) if path.path.is_ident("str") => {
            "arguments cross the wire by value; take `String` instead of `&str`".to_owned()
        }
        Type::Slice(slice) => {
            let inner = &slice.elem;
            format!(
                "arguments cross the wire by value; take `Vec<{}>` instead of a slice",
                quote!(#inner)
            )
        }
        other => format!(
            "arguments cross the wire by value; take `{}` instead of a reference",
            quote!(#other)
        ),
    }
}

fn last_segment(path: &TypePath) -> syn::Result<(String, Vec<&Type>)> {
    let Some(segment) = path.path.segments.last() else {
        return Err(syn::Error::new_spanned(path, "expected a type name"));
    };
    let args = match &segment.arguments {
        PathArguments::None => Vec::new(),
        PathArguments::AngleBracketed(generics) => {
            let mut types = Vec::new();
            for arg in &generics.args {
                match arg {
                    GenericArgument::Type(ty) => types.push(ty),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "only type arguments are supported here",
                        ))
                    }
                }
            }
            types
        }
        PathArguments::Parenthesized(_) => {
            return Err(syn::Error::new_spanned(
                path,
                "functions cannot cross the wire; take data instead",
            ))
        }
    };
    Ok((segment.ident.to_string(), args))
}

fn single_arg<'a>(ty: &Type, args: Vec<&'a Type>, name: &str) -> syn::Result<&'a Type> {
    match args.as_slice() {
        [inner] => Ok(inner),
        _ => Err(syn::Error::new_spanned(
            ty,
            format!("expected `{name}<T>` with one type argument"),
        )),
    }
}

fn two_args<'a>(ty: &Type, args: Vec<&'a Type>, name: &str) -> syn::Result<(&'a Type, &'a Type)> {
    match args.as_slice() {
        [key, value] => Ok((key, value)),
        _ => Err(syn::Error::new_spanned(
            ty,
            format!(
                "expected `{name}<K, V>`; custom hashers are not supported, use the default one"
            ),
        )),
    }
}

fn is_u8(ty: &Type) -> bool {
    matches!(strip_groups(ty), Type::Path(path) if path.qself.is_none() && path.path.is_ident("u8"))
}

fn is_vec_u8(ty: &Type) -> bool {
    let Ok(path) = type_path(strip_groups(ty)) else {
        return false;
    };
    match last_segment(path) {
        Ok((name, args)) => name == "Vec" && matches!(args.as_slice(), [inner] if is_u8(inner)),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(src: &str) -> syn::Result<FieldType> {
        let ty: Type = syn::parse_str(src).expect("test type parses");
        field_type(&ty)
    }

    fn attr(src: &str) -> String {
        map(src).expect("type maps").prost_attr(1).to_string()
    }

    fn error(src: &str) -> String {
        map(src).expect_err("type is refused").to_string()
    }

    #[test]
    fn scalars_and_strings() {
        assert_eq!(attr("u64"), quote!(uint64, tag = "1").to_string());
        assert_eq!(attr("bool"), quote!(bool, tag = "1").to_string());
        assert_eq!(attr("f64"), quote!(double, tag = "1").to_string());
        assert_eq!(attr("String"), quote!(string, tag = "1").to_string());
        assert_eq!(
            attr("std::string::String"),
            quote!(string, tag = "1").to_string()
        );
    }

    #[test]
    fn bytes() {
        assert_eq!(
            attr("Vec<u8>"),
            quote!(bytes = "vec", tag = "1").to_string()
        );
        assert_eq!(
            attr("bytes::Bytes"),
            quote!(bytes = "bytes", tag = "1").to_string()
        );
        assert_eq!(
            attr("Vec<Vec<u8>>"),
            quote!(bytes = "vec", repeated, tag = "1").to_string()
        );
        assert_eq!(
            attr("Option<Vec<u8>>"),
            quote!(bytes = "vec", optional, tag = "1").to_string()
        );
    }

    #[test]
    fn lists_optionals_and_messages() {
        assert_eq!(
            attr("Vec<u32>"),
            quote!(uint32, repeated, tag = "1").to_string()
        );
        assert_eq!(
            attr("Vec<UserModel>"),
            quote!(message, repeated, tag = "1").to_string()
        );
        assert_eq!(
            attr("Option<i64>"),
            quote!(int64, optional, tag = "1").to_string()
        );
        assert_eq!(
            attr("Option<UserModel>"),
            quote!(message, optional, tag = "1").to_string()
        );
        assert_eq!(
            attr("UserModel"),
            quote!(message, required, tag = "1").to_string()
        );
    }

    #[test]
    fn maps() {
        assert_eq!(
            attr("HashMap<String, String>"),
            quote!(map = "string, string", tag = "1").to_string()
        );
        assert_eq!(
            attr("std::collections::BTreeMap<u32, UserModel>"),
            quote!(btree_map = "uint32, message", tag = "1").to_string()
        );
        assert!(error("HashMap<f64, String>").contains("map keys"));
        assert!(error("HashMap<UserModel, String>").contains("map keys"));
    }

    #[test]
    fn refused_types_say_what_to_write() {
        assert!(error("u16").contains("use `u32`"));
        assert!(error("usize").contains("use `u64`"));
        assert!(error("(u32, u32)").contains("struct"));
        assert!(error("[u8; 4]").contains("Vec<T>"));
        assert!(error("&str").contains("take `String`"));
        assert!(error("Option<Vec<u32>>").contains("empty list"));
        assert!(error("Vec<Option<u32>>").contains("missing items"));
        assert!(error("Vec<Vec<u32>>").contains("nested lists"));
        assert!(error("Vec<u16>").contains("16-bit"));
    }

    #[test]
    fn results_need_single_values() {
        let list: Type = syn::parse_str("Vec<u32>").expect("test type parses");
        assert!(result_side(&list)
            .expect_err("list refused")
            .to_string()
            .contains("inside a result"));
        let message: Type = syn::parse_str("NotFound").expect("test type parses");
        assert_eq!(result_side(&message).ok(), Some(Singular::Message));
    }
}
