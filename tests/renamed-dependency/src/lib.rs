//! A service and its messages written against wirecall under the name `rpc`, as a crate
//! that renames the dependency (`rpc = { package = "wirecall", .. }`) does. Nothing here may
//! name `wirecall`: this crate compiles only if `crate = "rpc"` reaches every generated path.

/// A unit-only enum: a protobuf `enum`.
#[rpc::message(crate = "rpc")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shade {
    /// The zero value.
    Plain,
    /// A second value.
    Bold,
    /// Values this side does not know yet.
    #[wirecall(other)]
    Unknown,
}

/// An enum with data: a protobuf `oneof`.
#[rpc::message(crate = "rpc")]
#[derive(Clone, PartialEq)]
pub enum Mark {
    /// A numbered mark.
    Number(u32),
    /// A named mark.
    Named {
        /// The name.
        name: String,
    },
}

/// A struct message, with a nested option (which goes through a serde `with` path).
#[rpc::message(crate = "rpc")]
#[derive(Clone, PartialEq)]
pub struct Note {
    /// The text.
    pub text: String,
    /// How it is drawn.
    pub shade: Shade,
    /// Marks on it.
    pub marks: Vec<Mark>,
    /// Present, present but empty, or absent.
    pub pin: Option<Option<u32>>,
}

/// Keeps notes.
#[rpc::service(crate = "rpc")]
pub trait Notebook {
    /// Returns `note` with its text upper-cased and a mark added.
    async fn stamp(&self, note: Note) -> Note;
    /// `Err` for an empty text.
    async fn length(&self, text: String) -> Result<u64, String>;
}

/// A notebook whose service takes serde types only.
#[rpc::service(crate = "::rpc", codecs(json, msgpack))]
pub trait Echo {
    /// Returns its argument.
    async fn echo(&self, shade: Shade) -> Shade;
}

/// The server side of both services.
pub struct Pages;

impl Notebook for Pages {
    async fn stamp(&self, mut note: Note) -> Note {
        note.text = note.text.to_uppercase();
        note.marks.push(Mark::Named {
            name: "stamped".to_owned(),
        });
        note
    }

    async fn length(&self, text: String) -> Result<u64, String> {
        if text.is_empty() {
            Err("the text is empty".to_owned())
        } else {
            Ok(text.len() as u64)
        }
    }
}

impl Echo for Pages {
    async fn echo(&self, shade: Shade) -> Shade {
        shade
    }
}

/// Re-exports wirecall under a path, as a crate that bundles its dependencies does.
pub mod reexports {
    pub use rpc;
}

/// A message and a service that reach wirecall through a module path.
pub mod nested {
    /// A message named through `crate::reexports::rpc`.
    #[crate::reexports::rpc::message(crate = "crate::reexports::rpc")]
    #[derive(Clone, PartialEq)]
    pub struct Ping {
        /// A counter.
        pub count: u32,
    }

    /// A service named through `crate::reexports::rpc`.
    #[crate::reexports::rpc::service(crate = "crate::reexports::rpc")]
    pub trait Pinger {
        /// Returns the ping with its count plus one.
        async fn ping(&self, ping: Ping) -> Ping;
    }

    impl Pinger for super::Pages {
        async fn ping(&self, ping: Ping) -> Ping {
            Ping {
                count: ping.count + 1,
            }
        }
    }
}
