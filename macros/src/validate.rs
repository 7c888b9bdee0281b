//! Validation: everything the user's trait must satisfy before we generate code.
//!
//! Each check pushes a spanned error onto one list so the user sees every problem in one
//! build; the errors are combined at the end.

use std::collections::HashMap;

use syn::{TraitItem, Type};

use crate::errors::Errors;
use crate::parse::{MethodDef, ReplyShape, ServiceDef};
use crate::policy::HedgeDef;
use crate::proto_type;
use wirecall_wire::method_hash;

/// Names of the generated client's own methods, and of the methods of the traits it
/// implements (`Clone`, `Debug`, and the blanket `ToOwned`, `Borrow`, `Into`, `Any`, ...); a
/// service method of the same name would collide with them or silently shadow them.
const CLIENT_METHODS: &[&str] = &[
    "connect",
    "discover",
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

/// How the checks shared by `#[service]` and `#[events]` name what they check.
pub struct Wording {
    /// "a service trait", "an event contract".
    pub trait_noun: &'static str,
    /// "service methods", "event methods".
    pub methods: &'static str,
    /// Why `&self`: who shares the implementation across what.
    pub shared: &'static str,
    /// Whether a method may take an upload (an argument of type `Streaming<T>`).
    pub uploads: bool,
}

/// The wording of `#[service]`'s errors.
pub const SERVICE: Wording = Wording {
    trait_noun: "a service trait",
    methods: "service methods",
    shared: "the server shares one implementation across concurrent calls",
    uploads: true,
};

/// Checks the whole service; `Err` holds every problem found.
pub fn validate(def: &ServiceDef) -> syn::Result<()> {
    let mut errors = Errors::default();
    if let Some(error) = &def.policy_errors {
        errors.push(error.clone());
    }
    validate_trait(def, &SERVICE, &mut errors);
    validate_trait_policy(def, &mut errors);
    for method in &def.methods {
        validate_method(def, method, &mut errors);
        validate_method_policy(method, &mut errors);
    }
    validate_ids(def, &mut errors);
    errors.finish()
}

/// The rules on the trait itself (no generics, supertraits, associated items, ...).
pub fn validate_trait(def: &ServiceDef, wording: &Wording, errors: &mut Errors) {
    let item = &def.item;
    let noun = wording.trait_noun;
    if !item.generics.params.is_empty() {
        errors.spanned(
            &item.generics,
            format!(
                "{noun} cannot be generic: both ends must agree on one set of types; \
                 use concrete types"
            ),
        );
    }
    if let Some(where_clause) = &item.generics.where_clause {
        errors.spanned(
            where_clause,
            format!("{noun} cannot have a `where` clause; remove it"),
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
                format!(
                    "{noun} cannot have supertraits other than `Send + Sync + 'static` \
                     (which the macro adds anyway); remove it"
                ),
            );
        }
    }
    if let Some(auto) = &item.auto_token {
        errors.spanned(
            auto,
            format!("{noun} cannot be an auto trait; remove `auto`"),
        );
    }
    for trait_item in &item.items {
        match trait_item {
            TraitItem::Fn(_) => {}
            TraitItem::Type(ty) => errors.spanned(
                ty,
                format!(
                    "{noun} cannot have associated types; use a concrete type in the \
                     method signatures"
                ),
            ),
            TraitItem::Const(constant) => errors.spanned(
                constant,
                format!(
                    "{noun} cannot have associated consts; move the constant out of the \
                     trait"
                ),
            ),
            other => errors.spanned(
                other,
                format!("{noun} can only contain `async fn` methods; remove this item"),
            ),
        }
    }
}

/// The trait's `#[wirecall(..)]` holds defaults; a fallback is one method's.
fn validate_trait_policy(def: &ServiceDef, errors: &mut Errors) {
    if let Some(fallback) = &def.policy.fallback {
        errors.spanned(
            fallback,
            "a fallback answers for one method, with its arguments and reply type: put \
             `fallback = ..` on the method's `#[wirecall(..)]`",
        );
    }
}

/// A method's `#[wirecall(..)]`: retries need `#[idempotent]`; a one-way call has no reply
/// to time, retry or replace.
fn validate_method_policy(method: &MethodDef, errors: &mut Errors) {
    let policy = &method.policy;
    if method.oneway.is_some() {
        if let Some(attr) = policy.attr.as_ref().filter(|_| !policy.is_empty()) {
            errors.push(syn::Error::new_spanned(
                attr,
                "a #[oneway] method has no reply to wait for, retry or replace, so it takes no \
                 policy; remove `#[wirecall(..)]` or `#[oneway]`",
            ));
        }
        return;
    }
    // A stream's own rules are in `validate_stream` and `validate_upload`.
    if method.is_stream_call() {
        return;
    }
    if let Some((_, span)) = policy.retries {
        if method.idempotent.is_none() {
            errors.push(syn::Error::new(
                span,
                format!(
                    "`retries` sends a failed call again, and a call whose connection broke \
                     may already have run; mark the method #[idempotent] if running it twice \
                     is harmless (`#[idempotent] async fn {}`), or remove `retries`",
                    method.sig.ident
                ),
            ));
        }
    }
    if let Some((HedgeDef::On { .. }, span)) = &policy.hedge {
        if method.idempotent.is_none() {
            errors.push(syn::Error::new(
                *span,
                format!(
                    "`hedge` sends a slow call to a second server while the first may still \
                     run it; mark the method #[idempotent] if running it twice is harmless \
                     (`#[idempotent] async fn {}`), or remove `hedge`",
                    method.sig.ident
                ),
            ));
        }
    }
}

fn validate_method(def: &ServiceDef, method: &MethodDef, errors: &mut Errors) {
    let name = &method.sig.ident;
    validate_signature(def, method, &SERVICE, errors);

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
        ReplyShape::Stream { whole, item } => {
            validate_stream(def, method, whole, item, errors);
        }
    }
    if !method.reply.is_stream() {
        validate_upload(method, errors);
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

/// A client-streaming method (an upload, one reply): not one-way, and no policy key that
/// would send the upload again.
fn validate_upload(method: &MethodDef, errors: &mut Errors) {
    if method.upload.is_none() {
        return;
    }
    if let Some(oneway) = &method.oneway {
        errors.spanned(
            oneway,
            "an upload is a stream call, answered when the upload ends; remove #[oneway]",
        );
    }
    refuse_replays(method, errors);
}

/// `retries`, `hedge` and `fallback` on a stream call: it is not sent again once items may
/// have travelled.
fn refuse_replays(method: &MethodDef, errors: &mut Errors) {
    let policy = &method.policy;
    if let Some((_, span)) = &policy.hedge {
        errors.push(syn::Error::new(
            *span,
            "a stream is not sent twice: its items could reach the caller from both copies, \
             so it takes no `hedge`; remove it",
        ));
    }
    if let Some((_, span)) = policy.retries {
        errors.push(syn::Error::new(
            span,
            "a stream is not sent again once items may have reached the caller, so it takes \
             no `retries`; remove it (reopen the stream in your code where that is safe)",
        ));
    }
    if let Some(fallback) = &policy.fallback {
        errors.spanned(
            fallback,
            "a fallback answers one reply; a stream has none to replace: remove `fallback`",
        );
    }
}

/// A server stream: items that carry something (a value, or a result), no `#[oneway]`, and
/// no policy key that only means something for one reply.
fn validate_stream(
    def: &ServiceDef,
    method: &MethodDef,
    whole: &Type,
    item: &ReplyShape,
    errors: &mut Errors,
) {
    match item {
        ReplyShape::Unit => errors.spanned(
            whole,
            "a stream of `()` carries nothing; stream a value (`Streaming<u64>`, a count or an \
             id) or return `()` once instead",
        ),
        ReplyShape::Stream { .. } => errors.spanned(
            whole,
            "a stream item cannot be a stream; stream the inner items, or a `Vec` of them",
        ),
        ReplyShape::Value(ty) => validate_return_type(ty, def.protobuf(), errors),
        ReplyShape::Result { ok, err, .. } => {
            match ok {
                Some(ok) => validate_return_type(ok, def.protobuf(), errors),
                None => errors.spanned(
                    whole,
                    "a stream item of `Result<(), E>` carries no value; stream \
                     `Result<T, E>` with a value, or return `Result<(), E>` once",
                ),
            }
            validate_return_type(err, def.protobuf(), errors);
        }
    }
    if method.oneway.is_some() {
        errors.spanned(
            whole,
            "a #[oneway] method sends no reply, so it cannot return a stream; remove the \
             return type or remove #[oneway]",
        );
    }
    refuse_replays(method, errors);
}

/// The most arguments a method (or an event) takes, an upload aside.
const MAX_ARGS: usize = 16;

/// The rules on a method's signature that do not depend on what it returns: `async`, no
/// generics, `&self`, plainly named arguments of types that can travel, no default body.
pub fn validate_signature(
    def: &ServiceDef,
    method: &MethodDef,
    wording: &Wording,
    errors: &mut Errors,
) {
    let sig = &method.sig;
    let name = &sig.ident;
    let methods = wording.methods;

    if sig.asyncness.is_none() {
        let fn_token = &sig.fn_token;
        errors.spanned(
            quote::quote!(#fn_token #name),
            format!("{methods} must be async; write `async fn {name}`"),
        );
    }
    if let Some(constness) = &sig.constness {
        errors.spanned(constness, format!("{methods} cannot be `const`; remove it"));
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.spanned(unsafety, format!("{methods} cannot be `unsafe`; remove it"));
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, format!("{methods} cannot declare an ABI; remove it"));
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(
            variadic,
            format!("{methods} cannot be variadic; remove `...`"),
        );
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            format!(
                "{methods} cannot be generic: every argument crosses the wire with one \
                 fixed type; use concrete types (and no lifetimes)"
            ),
        );
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        errors.spanned(
            where_clause,
            format!("{methods} cannot have a `where` clause; remove it"),
        );
    }

    validate_receiver(method, wording, errors);

    // The arguments travel as one generic message over a tuple, which the runtime
    // implements up to 16 fields (`runtime/src/message/fields.rs`).
    let travelling = method.args.len() - usize::from(method.upload.is_some());
    if travelling > MAX_ARGS {
        let extra = method
            .args
            .iter()
            .enumerate()
            .filter(|(index, _)| method.upload != Some(*index))
            .nth(MAX_ARGS)
            .map(|(_, arg)| arg);
        if let Some(extra) = extra {
            errors.spanned(
                &extra.pat,
                format!(
                    "{methods} take at most {MAX_ARGS} arguments (an upload aside), this one \
                     takes {travelling}; group some in a `#[wirecall::message]` struct"
                ),
            );
        }
    }

    for arg in &method.args {
        if arg.ident().is_none() {
            errors.spanned(
                &arg.pat,
                "name each argument with a plain identifier, e.g. `point: Point`; \
                 destructure it inside your impl",
            );
        }
        if let Some(item) = crate::parse::streaming_arg(&arg.ty) {
            if !wording.uploads {
                errors.spanned(
                    &arg.ty,
                    format!("{methods} carry values, not streams; take the items as a `Vec<T>`"),
                );
            } else if !method
                .upload
                .is_some_and(|index| std::ptr::eq(&method.args[index], arg))
            {
                errors.spanned(
                    &arg.ty,
                    "a method takes at most one upload (an argument of type `Streaming<T>`); \
                     stream one type of item, an enum if the pieces differ",
                );
            } else {
                validate_arg_type(item, def.protobuf(), errors);
            }
            continue;
        }
        validate_arg_type(&arg.ty, def.protobuf(), errors);
    }

    if let Some(body) = &method.default_body {
        errors.spanned(
            body,
            format!(
                "{methods} cannot have a default body; end the declaration with `;` and \
                 write the body in your impl"
            ),
        );
    }
}

fn validate_receiver(method: &MethodDef, wording: &Wording, errors: &mut Errors) {
    let sig = &method.sig;
    let Some(receiver) = &method.receiver else {
        errors.spanned(
            &sig.ident,
            format!(
                "{} take `&self` first: add `&self` as the first parameter",
                wording.methods
            ),
        );
        return;
    };
    let shared = wording.shared;
    let wrong = if receiver.colon_token.is_some() {
        Some("write the receiver as plain `&self` (no explicit type)".to_owned())
    } else if receiver.reference.is_none() {
        Some(format!("take `&self`, not `self`: {shared}"))
    } else if receiver.mutability.is_some() {
        Some(format!(
            "take `&self`, not `&mut self`: {shared}; use interior mutability (e.g. a \
             `Mutex`) for state"
        ))
    } else if matches!(&receiver.reference, Some((_, Some(_)))) {
        Some("remove the lifetime: write plain `&self`".to_owned())
    } else {
        None
    };
    if let Some(message) = wrong {
        errors.spanned(receiver, message);
    }
}

/// `protobuf`: whether the service's types must map to Protobuf; without it (a service with
/// `codecs(json, msgpack)`) any serde type is fine.
pub fn validate_arg_type(ty: &Type, protobuf: bool, errors: &mut Errors) {
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
