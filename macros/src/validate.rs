//! Validation: everything the user's trait must satisfy before we generate code.
//!
//! Each check pushes a spanned error onto one list so the user sees every problem in one
//! build; the errors are combined at the end.

use std::collections::HashMap;

use syn::{TraitItem, Type};

use crate::errors::Errors;
use crate::parse::{MethodDef, ReplyShape, ServiceDef};
use crate::proto_type;
use wirecall_wire::method_hash;

/// Names of the generated client's own methods, and of the methods of the traits it
/// implements (`Clone`, `Debug`, and the blanket `ToOwned`, `Borrow`, `Into`, `Any`, ...); a
/// service method of the same name would collide with them or silently shadow them.
const CLIENT_METHODS: &[&str] = &[
    "connect",
    "discover",
    "over",
    "new",
    "channel",
    "codec",
    "with_timeout",
    "clone",
    "clone_from",
    "clone_into",
    "fmt",
    "to_owned",
    "borrow",
    "borrow_mut",
    "into",
    "try_into",
    "type_id",
];

/// Checks the whole service; `Err` holds every problem found.
pub fn validate(def: &ServiceDef) -> syn::Result<()> {
    let mut errors = Errors::default();
    validate_trait(def, &mut errors);
    for method in &def.methods {
        validate_method(def, method, &mut errors);
    }
    validate_ids(def, &mut errors);
    errors.finish()
}

fn validate_trait(def: &ServiceDef, errors: &mut Errors) {
    let item = &def.item;
    if !item.generics.params.is_empty() {
        errors.spanned(
            &item.generics,
            "a service trait cannot be generic: both ends must agree on one set of types; \
             use concrete types",
        );
    }
    if let Some(where_clause) = &item.generics.where_clause {
        errors.spanned(
            where_clause,
            "a service trait cannot have a `where` clause; remove it",
        );
    }
    // The macro adds `Send + Sync + 'static` itself; writing them is fine, others are not.
    for bound in &item.supertraits {
        let implied = match bound {
            syn::TypeParamBound::Trait(bound) => {
                bound.lifetimes.is_none()
                    && matches!(bound.modifier, syn::TraitBoundModifier::None)
                    && bound.path.segments.last().is_some_and(|segment| {
                        (segment.ident == "Send" || segment.ident == "Sync")
                            && segment.arguments.is_none()
                    })
            }
            syn::TypeParamBound::Lifetime(lifetime) => lifetime.ident == "static",
            _ => false,
        };
        if !implied {
            errors.spanned(
                bound,
                "a service trait cannot have supertraits other than `Send + Sync + 'static` \
                 (which the macro adds anyway); remove it",
            );
        }
    }
    if let Some(auto) = &item.auto_token {
        errors.spanned(
            auto,
            "a service trait cannot be an auto trait; remove `auto`",
        );
    }
    for trait_item in &item.items {
        match trait_item {
            TraitItem::Fn(_) => {}
            TraitItem::Type(ty) => errors.spanned(
                ty,
                "a service trait cannot have associated types; use a concrete type in the \
                 method signatures",
            ),
            TraitItem::Const(constant) => errors.spanned(
                constant,
                "a service trait cannot have associated consts; move the constant out of the \
                 trait",
            ),
            other => errors.spanned(
                other,
                "a service trait can only contain `async fn` methods; remove this item",
            ),
        }
    }
}

fn validate_method(def: &ServiceDef, method: &MethodDef, errors: &mut Errors) {
    let sig = &method.sig;
    let name = &sig.ident;

    if sig.asyncness.is_none() {
        let fn_token = &sig.fn_token;
        errors.spanned(
            quote::quote!(#fn_token #name),
            format!("service methods must be async; write `async fn {name}`"),
        );
    }
    if let Some(constness) = &sig.constness {
        errors.spanned(constness, "service methods cannot be `const`; remove it");
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.spanned(unsafety, "service methods cannot be `unsafe`; remove it");
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, "service methods cannot declare an ABI; remove it");
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(variadic, "service methods cannot be variadic; remove `...`");
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "service methods cannot be generic: every argument crosses the wire with one \
             fixed type; use concrete types (and no lifetimes)",
        );
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        errors.spanned(
            where_clause,
            "service methods cannot have a `where` clause; remove it",
        );
    }

    validate_receiver(method, errors);

    for arg in &method.args {
        if arg.ident().is_none() {
            errors.spanned(
                &arg.pat,
                "name each argument with a plain identifier, e.g. `point: Point`; \
                 destructure it inside your impl",
            );
        }
        validate_arg_type(&arg.ty, def.protobuf(), errors);
    }

    if let Some(body) = &method.default_body {
        errors.spanned(
            body,
            "service methods cannot have a default body; end the declaration with `;` and \
             write the body in your impl",
        );
    }

    match &method.reply {
        ReplyShape::Unit => {}
        ReplyShape::Value(ty) => {
            validate_return_type(ty, def.protobuf(), errors);
            if method.oneway.is_some() {
                errors.spanned(
                    ty,
                    "a #[oneway] method sends no reply, so it cannot return a value; \
                     remove the return type or remove #[oneway]",
                );
            }
        }
        ReplyShape::Result { whole, ok, err } => {
            if let Some(ok) = ok {
                validate_return_type(ok, def.protobuf(), errors);
            }
            validate_return_type(err, def.protobuf(), errors);
            if method.oneway.is_some() {
                errors.spanned(
                    whole,
                    "a #[oneway] method sends no reply, so it cannot return a result; \
                     remove the return type or remove #[oneway]",
                );
            }
        }
    }

    if let Some(idempotent) = &method.idempotent {
        if !matches!(idempotent.meta, syn::Meta::Path(_)) {
            errors.spanned(idempotent, "write `#[idempotent]` without arguments");
        }
    }
    if let Some(oneway) = &method.oneway {
        if !matches!(oneway.meta, syn::Meta::Path(_)) {
            errors.spanned(oneway, "write `#[oneway]` without arguments");
        }
    }
    if let Some(idempotent) = &method.idempotent {
        if !matches!(idempotent.meta, syn::Meta::Path(_)) {
            errors.spanned(idempotent, "write `#[idempotent]` without arguments");
        } else if method.oneway.is_some() {
            errors.spanned(
                idempotent,
                "a #[oneway] method is never retried (it has no reply to wait for); \
                 remove #[idempotent]",
            );
        }
    }

    if CLIENT_METHODS.contains(&method.wire_name.as_str()) {
        errors.spanned(
            name,
            format!(
                "`{}` clashes with the generated `{}Client::{}`; rename the method",
                method.wire_name, def.item.ident, method.wire_name
            ),
        );
    }
}

fn validate_receiver(method: &MethodDef, errors: &mut Errors) {
    let sig = &method.sig;
    let Some(receiver) = &method.receiver else {
        errors.spanned(
            &sig.ident,
            "service methods take `&self` first: add `&self` as the first parameter",
        );
        return;
    };
    let wrong = if receiver.colon_token.is_some() {
        Some("write the receiver as plain `&self` (no explicit type)")
    } else if receiver.reference.is_none() {
        Some(
            "take `&self`, not `self`: the server shares one implementation across \
             concurrent calls",
        )
    } else if receiver.mutability.is_some() {
        Some(
            "take `&self`, not `&mut self`: the server shares one implementation across \
             concurrent calls; use interior mutability (e.g. a `Mutex`) for state",
        )
    } else if matches!(&receiver.reference, Some((_, Some(_)))) {
        Some("remove the lifetime: write plain `&self`")
    } else {
        None
    };
    if let Some(message) = wrong {
        errors.spanned(receiver, message);
    }
}

/// `protobuf`: whether the service's types must map to Protobuf; without it (a service with
/// `codecs(json, msgpack)`) any serde type is fine.
fn validate_arg_type(ty: &Type, protobuf: bool, errors: &mut Errors) {
    match ty {
        Type::Reference(reference) => {
            errors.spanned(ty, proto_type::reference_message(&reference.elem));
        }
        Type::ImplTrait(_) => errors.spanned(
            ty,
            "`impl Trait` arguments cannot cross the wire; take a concrete type",
        ),
        _ if protobuf => {
            if let Err(error) = proto_type::check(ty) {
                errors.push(error);
            }
        }
        _ => {}
    }
}

fn validate_return_type(ty: &Type, protobuf: bool, errors: &mut Errors) {
    match ty {
        Type::Reference(_) => errors.spanned(
            ty,
            "replies cross the wire by value; return an owned type instead of a reference",
        ),
        Type::ImplTrait(_) => errors.spanned(
            ty,
            "write the reply type itself; the macro makes the method return a future",
        ),
        _ if protobuf => {
            if let Err(error) = proto_type::check(ty) {
                errors.push(error);
            }
        }
        _ => {}
    }
}

/// Two method names hashing to one id would make the server unable to tell them apart.
fn validate_ids(def: &ServiceDef, errors: &mut Errors) {
    let mut seen: HashMap<u64, &MethodDef> = HashMap::new();
    for method in &def.methods {
        let id = method_hash(&def.wire_name, &method.wire_name);
        if let Some(first) = seen.insert(id, method) {
            if first.wire_name == method.wire_name {
                // Duplicate method names are reported by rustc on the trait itself.
                continue;
            }
            errors.spanned(
                &method.sig.ident,
                format!(
                    "the method ids of `{}` and `{}` collide ({id:#018x}); rename one of them",
                    first.wire_name, method.wire_name
                ),
            );
        }
    }
}
