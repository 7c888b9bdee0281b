//! Parsing an event contract: the service macro's parser reads the trait (arguments
//! `name`, `codecs`, `crate`; every method with its spans), and this adds what an event is.

use syn::ItemTrait;

use crate::parse::{parse_service, ServiceArgs, ServiceDef};

/// An event contract: a trait whose every method is one event.
pub struct EventsDef {
    /// The trait as the service macro models it; each method is an event, its arguments the
    /// payload, its name the routing key.
    pub def: ServiceDef,
}

/// Reads the trait; only non-trait input fails earlier, everything else is judged by
/// `validate`.
pub fn parse_events(args: ServiceArgs, item: ItemTrait) -> EventsDef {
    EventsDef {
        def: parse_service(args, item),
    }
}
