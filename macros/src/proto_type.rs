//! Which Rust types can travel, shared by service arguments, replies and `#[wirecall::message]`
//! fields.
//!
//! What a type looks like on the wire is decided by trait impls in the runtime
//! (`wirecall::__private::proto::ProtoField`), so any type that implements them works, and a
//! type that does not gets a compile error on its own span saying to add
//! `#[wirecall::message]`. This module only refuses, early and with a precise hint, the types
//! the trait cannot express or that are a likely mistake (references, `usize`, `u128`, map
//! keys protobuf does not allow, ...). A macro cannot resolve paths, so the rules look at the
//! written type's last path segment.

use quote::quote;
use syn::{GenericArgument, PathArguments, Type, TypePath};

use crate::crate_path::CratePath;

/// The most elements a tuple may have (the runtime implements tuples up to this size).
const MAX_TUPLE: usize = 8;

/// Checks a field, argument or reply type, and every type nested inside it.
pub fn check(ty: &Type) -> syn::Result<()> {
    let ty = strip_groups(ty);
    match ty {
        Type::Path(path) if path.qself.is_none() => check_path(ty, path),
        Type::Tuple(tuple) if tuple.elems.is_empty() => Err(syn::Error::new_spanned(
            ty,
            "`()` carries nothing; remove it, or use `bool` / a #[wirecall::message] struct",
        )),
        Type::Tuple(tuple) if tuple.elems.len() > MAX_TUPLE => Err(syn::Error::new_spanned(
            ty,
            format!(
                "tuples of up to {MAX_TUPLE} elements can travel; use a #[wirecall::message] \
                 struct with named fields"
            ),
        )),
        Type::Tuple(tuple) => tuple.elems.iter().try_for_each(check),
        Type::Array(array) => check(&array.elem),
        Type::Reference(reference) => Err(syn::Error::new_spanned(
            ty,
            reference_message(&reference.elem),
        )),
        other => Err(syn::Error::new_spanned(other, other_message(other))),
    }
}

fn other_message(ty: &Type) -> &'static str {
    match ty {
        Type::Path(_) => {
            "qualified paths (`<T as Trait>::Assoc`) cannot be checked; name the type directly"
        }
        Type::Slice(_) => "a slice has no size; use `Vec<T>` or an array `[T; N]`",
        Type::ImplTrait(_) => "`impl Trait` cannot cross the wire; take a concrete type",
        Type::TraitObject(_) => "trait objects cannot cross the wire; take a concrete type",
        Type::Ptr(_) => "raw pointers cannot cross the wire; take an owned type",
        Type::BareFn(_) => "functions cannot cross the wire; take data instead",
        Type::Never(_) => "`!` cannot cross the wire; return `()` instead",
        Type::Infer(_) => "write the type out; `_` cannot be checked",
        _ => {
            "this type cannot cross the wire; use a type from the book's type table or a \
             #[wirecall::message] struct or enum"
        }
    }
}

fn check_path(ty: &Type, path: &TypePath) -> syn::Result<()> {
    let (name, args) = last_segment(path)?;
    if let Some(message) = refused(&name) {
        return Err(syn::Error::new_spanned(ty, message));
    }
    match name.as_str() {
        "HashMap" | "BTreeMap" if args.len() >= 2 => {
            check_map_key(args[0])?;
            check(args[1])
        }
        "VecDeque" | "LinkedList" | "BinaryHeap" if !args.is_empty() => Err(
            syn::Error::new_spanned(ty, format!("`{name}` cannot travel; use `Vec<T>` instead")),
        ),
        "Rc" | "Arc" | "Cow" | "Cell" | "RefCell" | "Mutex" | "RwLock" if !args.is_empty() => {
            Err(syn::Error::new_spanned(
                ty,
                format!("`{name}` cannot travel; use the owned type itself"),
            ))
        }
        // Custom hashers (`HashSet<T, S>`) are fine: only type arguments are checked.
        _ => args.into_iter().try_for_each(check),
    }
}

/// Protobuf map keys are integers, `bool` or strings.
fn check_map_key(ty: &Type) -> syn::Result<()> {
    let key = strip_groups(ty);
    let allowed = match key {
        Type::Path(path) if path.qself.is_none() => {
            let (name, args) = last_segment(path)?;
            args.is_empty()
                && matches!(
                    name.as_str(),
                    "bool"
                        | "u8"
                        | "u16"
                        | "u32"
                        | "u64"
                        | "i8"
                        | "i16"
                        | "i32"
                        | "i64"
                        | "char"
                        | "String"
                )
        }
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(syn::Error::new_spanned(
            ty,
            "map keys must be integers, `bool`, `char` or `String` (protobuf's rule for map \
             keys); use a `Vec` of #[wirecall::message] pairs for other keys",
        ))
    }
}

/// Primitive types with no wire form, with what to write instead.
fn refused(name: &str) -> Option<&'static str> {
    Some(match name {
        "u128" => {
            "128-bit integers cannot travel (protobuf has none); use two `u64` fields or `[u8; 16]`"
        }
        "i128" => {
            "128-bit integers cannot travel (protobuf has none); use two `i64` fields or `[u8; 16]`"
        }
        "usize" => "`usize` has no fixed width on the wire; use `u64`",
        "isize" => "`isize` has no fixed width on the wire; use `i64`",
        "str" => "use `String`",
        _ => return None,
    })
}

/// Whether a field is written `Option<Option<T>>`: in JSON and MessagePack it then goes
/// through `nested_option` (`[value]`, `[null]` or `null`), because serde alone would write
/// `Some(None)` as `None`. The one rule for every field of a wire struct or enum variant, the
/// serde derive's attribute and the generated reader alike.
pub fn is_nested_option(ty: &Type) -> bool {
    fn option_arg(ty: &Type) -> Option<&Type> {
        let Type::Path(path) = strip_groups(ty) else {
            return None;
        };
        let (name, args) = last_segment(path).ok()?;
        match (name.as_str(), args.as_slice()) {
            ("Option", [inner]) => Some(*inner),
            _ => None,
        }
    }
    option_arg(ty).and_then(option_arg).is_some()
}

/// `#[serde(with = ...)]` for a field that [`is_nested_option`].
pub fn nested_option_attr(krate: &CratePath, ty: &Type) -> Option<syn::Attribute> {
    if !is_nested_option(ty) {
        return None;
    }
    let with = krate.string_with("::__private::proto::nested_option");
    Some(syn::parse_quote!(
        #[serde(with = #with)]
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn error(src: &str) -> String {
        let ty: Type = syn::parse_str(src).expect("test type parses");
        check(&ty).expect_err("type is refused").to_string()
    }

    fn accepted(src: &str) -> bool {
        let ty: Type = syn::parse_str(src).expect("test type parses");
        check(&ty).is_ok()
    }

    #[test]
    fn standard_types_are_accepted() {
        for ty in [
            "u8",
            "i16",
            "char",
            "std::time::Duration",
            "Vec<Vec<u32>>",
            "Option<Vec<String>>",
            "(u32, String)",
            "[u8; 4]",
            "BTreeMap<String, Vec<u32>>",
            "HashSet<u64>",
            "Box<Node>",
            "Option<Option<u32>>",
        ] {
            assert!(accepted(ty), "{ty}");
        }
    }

    #[test]
    fn refused_types_say_what_to_write() {
        assert!(error("usize").contains("use `u64`"));
        assert!(error("Vec<u128>").contains("128-bit"));
        assert!(error("&str").contains("take `String`"));
        assert!(error("&[u8]").contains("Vec<u8>"));
        assert!(error("HashMap<f64, String>").contains("map keys"));
        assert!(error("BTreeMap<UserModel, String>").contains("map keys"));
        assert!(error("VecDeque<u32>").contains("Vec<T>"));
        assert!(error("std::rc::Rc<u32>").contains("owned type"));
        assert!(error("(u8, u8, u8, u8, u8, u8, u8, u8, u8)").contains("up to 8"));
        assert!(error("()").contains("carries nothing"));
    }
}
