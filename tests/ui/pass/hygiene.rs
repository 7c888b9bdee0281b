// Generated code must not depend on the user's prelude or be confused by user types that
// shadow prelude names.
#![no_implicit_prelude]
#![deny(warnings)]

/// Shadows `core::result::Result` for everything below.
#[::wirecall::message]
pub struct Result {
    pub code: u32,
}

/// Shadows `core::option::Option`.
#[::wirecall::message]
pub struct Option {
    pub present: bool,
}

/// An enum travels too, with data and without.
#[::wirecall::message]
pub enum Level {
    Low,
    High,
    #[wirecall(other)]
    Unknown,
}

#[::wirecall::message]
pub enum Event {
    Started(u64),
    Moved { to: ::std::string::String, level: Level },
    Stopped,
}

/// `Option<Message>`, maps and nested lists as fields.
#[::wirecall::message]
pub struct Holder {
    pub inner: ::core::option::Option<Result>,
    pub events: ::std::vec::Vec<Event>,
    pub by_name: ::std::collections::BTreeMap<::std::string::String, Level>,
    pub grid: ::std::vec::Vec<::std::vec::Vec<u8>>,
    pub pair: (u8, char),
}

/// Shadows the prelude's `Vec`, `String`, `Box`, `Some` and `Ok` names too.
pub struct Vec;
pub struct String;
pub struct Box;
pub struct Arc;
#[allow(non_camel_case_types)]
pub struct dispatch;

#[::wirecall::service]
pub trait Hygienic {
    /// Documented.
    async fn plain(&self, text: ::std::string::String, code: Result) -> Option;
    async fn list(&self, items: ::std::vec::Vec<Result>) -> ::std::vec::Vec<u64>;
    async fn fallible(&self) -> ::core::result::Result<Result, Option>;
    async fn fallible_unit(&self) -> ::core::result::Result<(), ::std::string::String>;
    async fn maybe(&self, value: ::core::option::Option<u32>) -> ::core::option::Option<Result>;
    async fn event(&self, event: Event) -> ::core::result::Result<Holder, Level>;
    #[oneway]
    async fn fire(&self);
}

struct Impl;

impl Hygienic for Impl {
    async fn plain(&self, _text: ::std::string::String, _code: Result) -> Option {
        Option { present: true }
    }
    async fn list(&self, _items: ::std::vec::Vec<Result>) -> ::std::vec::Vec<u64> {
        ::std::vec::Vec::new()
    }
    async fn fallible(&self) -> ::core::result::Result<Result, Option> {
        ::core::result::Result::Ok(Result { code: 1 })
    }
    async fn fallible_unit(&self) -> ::core::result::Result<(), ::std::string::String> {
        ::core::result::Result::Ok(())
    }
    async fn maybe(&self, _value: ::core::option::Option<u32>) -> ::core::option::Option<Result> {
        ::core::option::Option::None
    }
    async fn event(&self, _event: Event) -> ::core::result::Result<Holder, Level> {
        ::core::result::Result::Err(Level::High)
    }
    async fn fire(&self) {}
}

fn main() {
    let _server = HygienicServer::new(Impl);
    let _ = (Vec, String, Box, Arc, dispatch);
}
