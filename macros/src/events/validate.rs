//! Validation of an event contract: the service macro's trait and signature rules, and what
//! is particular to events: a handler returns `()` or `Result<(), E>`, takes no call markers,
//! and is not named like a method of the generated publisher.

use crate::errors::Errors;
use crate::parse::ReplyShape;
use crate::validate::{validate_signature, validate_trait, Wording};

use super::parse::EventsDef;

const EVENTS: Wording = Wording {
    trait_noun: "an event contract",
    methods: "event methods",
    shared: "the bus shares one subscriber across concurrent events",
    uploads: false,
};

/// The generated publisher's own methods and those of the traits it implements; an event of
/// the same name would clash with or shadow them.
const PUBLISHER_METHODS: &[&str] = &[
    "new",
    "bus",
    "codec",
    "with_codec",
    "with_metadata",
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

/// Checks the whole contract; `Err` holds every problem found.
pub fn validate(contract: &EventsDef) -> syn::Result<()> {
    let def = &contract.def;
    let mut errors = Errors::default();
    validate_trait(def, &EVENTS, &mut errors);
    if def.methods.is_empty() {
        errors.spanned(
            &def.item.ident,
            "an event contract needs at least one event: add \
             `async fn something_happened(&self, ...);`",
        );
    }
    for method in &def.methods {
        validate_signature(def, method, &EVENTS, &mut errors);
        match &method.reply {
            ReplyShape::Unit | ReplyShape::Result { ok: None, .. } => {}
            ReplyShape::Value(ty) => errors.spanned(
                ty,
                "an event handler returns nothing to the publisher; remove the return type, \
                 or return `Result<(), E>` (with `E: Display`) to have a failed event retried",
            ),
            ReplyShape::Stream { whole, .. } => errors.spanned(
                whole,
                "an event handler returns nothing to the publisher; remove the return type, \
                 or return `Result<(), E>` (with `E: Display`) to have a failed event retried",
            ),
            ReplyShape::Result { ok: Some(ok), .. } => errors.spanned(
                ok,
                "an event handler's result carries no value: write `Result<(), E>` \
                 (an `Err` retries the event)",
            ),
        }
        for marker in [&method.oneway, &method.idempotent].into_iter().flatten() {
            errors.spanned(
                marker,
                "events are always one-way and may be delivered more than once; \
                 remove this call marker",
            );
        }
        if PUBLISHER_METHODS.contains(&method.wire_name.as_str()) {
            errors.spanned(
                &method.sig.ident,
                format!(
                    "`{}` clashes with the generated `{}Publisher::{}`; rename the event",
                    method.wire_name, def.item.ident, method.wire_name
                ),
            );
        }
    }
    errors.finish()
}
