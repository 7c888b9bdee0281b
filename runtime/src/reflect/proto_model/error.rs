//! Why a set of schemas has no `.proto` form: the model refuses it, so the text export and the
//! descriptors fail alike.

/// Why a set of schemas has no `.proto` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtoFileError {
    /// The package name is not dotted identifiers.
    #[error("`{0}` is not a protobuf package name; use dotted identifiers such as `acme.users`")]
    BadPackage(String),
    /// Two services use different Rust types with one name.
    #[error(
        "two types are named `{name}` (`{first}` and `{second}`); export their services into \
         separate files"
    )]
    NameClash {
        /// The shared name.
        name: String,
        /// One Rust path.
        first: String,
        /// The other.
        second: String,
    },
    /// A field refers to a type that no exported schema defines (only building descriptors
    /// checks this: the text is written as the schemas say).
    #[error("type `{0}` is used but no exported schema defines it")]
    UnknownType(String),
}
