// Generated event code must not depend on the user's prelude or be confused by user types
// that shadow prelude names.
#![no_implicit_prelude]
#![deny(warnings)]

/// Shadows `core::result::Result`.
#[::wirecall::message]
pub struct Result {
    pub code: u32,
}

/// Shadows `core::option::Option`.
#[::wirecall::message]
pub struct Option {
    pub present: bool,
}

/// Events with arguments of every shape, and handlers returning `()` and `Result<(), E>`.
#[::wirecall::events]
pub trait Audit {
    /// Something happened.
    async fn happened(&self, what: Result, maybe: Option);
    async fn counted(&self, count: u64, tags: ::std::vec::Vec<::std::string::String>)
        -> ::core::result::Result<(), ::std::string::String>;
    async fn ticked(&self);
}

struct Log;

impl Audit for Log {
    async fn happened(&self, _what: Result, _maybe: Option) {}
    async fn counted(
        &self,
        _count: u64,
        _tags: ::std::vec::Vec<::std::string::String>,
    ) -> ::core::result::Result<(), ::std::string::String> {
        ::core::result::Result::Ok(())
    }
    async fn ticked(&self) {}
}

fn main() {
    let runtime = ::tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let bus = ::wirecall::events::EventBus::in_process();
        let _subscription = bus
            .subscribe("audit", AuditSubscriber::new(Log))
            .await
            .unwrap();
        let publisher = AuditPublisher::new(&bus).with_codec(::wirecall::Codec::Protobuf);
        publisher
            .happened(Result { code: 1 }, Option { present: true })
            .await
            .unwrap();
        publisher
            .counted(3, ::std::vec![::std::borrow::ToOwned::to_owned("a")])
            .await
            .unwrap();
        publisher.ticked().await.unwrap();
        ::std::assert_eq!(AuditPublisher::CONTRACT.name, "Audit");
        ::std::assert_eq!(AuditPublisher::CONTRACT.events.len(), 3);
    });
}
