//! The schema of a service, as the reflection service sends it. These types are themselves
//! `#[wirecall::message]`s, so reflection works in every codec and describes itself.

/// One service a server serves, as `list_services` reports it.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct ServiceSummary {
    /// The service's wire name.
    pub name: String,
    /// The first paragraph of the trait's doc comment.
    pub summary: String,
    /// The method names, in declaration order.
    pub methods: Vec<String>,
}

/// Everything a client needs to call a service without its Rust trait: the methods, their
/// argument and reply types, and the definition of every named type they use.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct ServiceSchema {
    /// The service's wire name (`#[service(name = "...")]` or the trait's name).
    pub name: String,
    /// The trait's doc comment.
    pub doc: String,
    /// The codecs the service's types support (`json`, `msgpack`, `protobuf`).
    pub codecs: Vec<String>,
    /// The methods, in declaration order.
    pub methods: Vec<MethodSchema>,
    /// Every `#[wirecall::message]` type the methods use, directly or nested, each once.
    pub types: Vec<TypeDef>,
    /// Whether argument and reply types are described: false for a hand-written
    /// [`Service`](crate::Service) that gives only its method names.
    pub described: bool,
}

/// One method of a service.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct MethodSchema {
    /// The method's name on the wire.
    pub name: String,
    /// Its wire id (FNV-1a of `"{service}.{method}"`).
    pub id: u64,
    /// The method's doc comment.
    pub doc: String,
    /// The arguments, in declaration order (the order of MessagePack arrays and Protobuf
    /// field numbers 1..n; JSON keys them by name).
    pub args: Vec<FieldSchema>,
    /// What the method returns.
    pub reply: ReplySchema,
    /// `#[oneway]`: the server never answers.
    pub oneway: bool,
    /// `#[idempotent]`: running the call twice has the effect of running it once, so a
    /// caller may retry it after a broken connection.
    pub idempotent: bool,
    /// The fault-tolerance policy its trait declares for clients (deadline, retries,
    /// concurrency, breaker), in the text form of policy files (`timeout=300ms retries=2`;
    /// empty: none). Clients may override it at run time; this is the declared one.
    pub policy: String,
    /// A server stream (protocol version 3): the method is opened with an `Open` frame and
    /// answers with items, each described by `reply`.
    pub server_stream: bool,
    /// For a method that takes an upload (client or bidirectional streaming): the type of
    /// one uploaded item (each travels in a message whose field `value` holds it). `args`
    /// leaves the upload out.
    pub upload: Option<TypeRef>,
}

/// A named, typed slot: an argument, a struct field or a field of an enum variant.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct FieldSchema {
    /// The name (the JSON key).
    pub name: String,
    /// The type.
    pub ty: TypeRef,
    /// The doc comment, if any.
    pub doc: String,
}

/// What a method returns, and so what its reply message holds.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub enum ReplySchema {
    /// Nothing (`()`, or a one-way method): an empty reply message.
    Unit,
    /// `T`: a reply message whose one field `value` is `T`.
    Value(TypeRef),
    /// `Result<T, E>`: a reply message with the optional fields `ok` (absent for
    /// `Result<(), E>`) and `err`, exactly one of them set.
    Result {
        /// `T`, or `None` for `Result<(), E>`.
        ok: Option<TypeRef>,
        /// `E`.
        err: TypeRef,
    },
}

/// A type, as it appears in an argument, a field or a reply. Named types are defined once in
/// [`ServiceSchema::types`] and referred to by name.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub enum TypeRef {
    /// `bool`.
    Bool,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `char`.
    Char,
    /// `String`.
    String,
    /// `Bytes`.
    Bytes,
    /// `std::time::Duration`.
    Duration,
    /// `std::time::SystemTime`.
    Timestamp,
    /// `Option<T>`.
    Option(Box<TypeRef>),
    /// `Vec<T>`.
    List(Box<TypeRef>),
    /// `HashSet<T>` or `BTreeSet<T>`.
    Set(Box<TypeRef>),
    /// `[T; N]`.
    Array {
        /// `T`.
        element: Box<TypeRef>,
        /// `N`.
        len: u64,
    },
    /// `HashMap<K, V>` or `BTreeMap<K, V>`.
    Map {
        /// `K`.
        key: Box<TypeRef>,
        /// `V`.
        value: Box<TypeRef>,
    },
    /// A tuple.
    Tuple(Vec<TypeRef>),
    /// A `#[wirecall::message]` struct or enum, defined in [`ServiceSchema::types`].
    Named(String),
    /// A type only serde knows (a service declared `#[service(codecs(json, msgpack))]`):
    /// the type as written in Rust, with no schema.
    Opaque(String),
}

/// The definition of a `#[wirecall::message]` type.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct TypeDef {
    /// Its name in this schema: the Rust name, with a number appended if two types share it.
    pub name: String,
    /// Its Rust path (`my_crate::users::UserModel`).
    pub rust_path: String,
    /// Its doc comment.
    pub doc: String,
    /// What it is.
    pub kind: TypeKind,
}

/// The three kinds of `#[wirecall::message]` types.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub enum TypeKind {
    /// A struct with named fields: a message with fields 1..n.
    Struct {
        /// The fields, in declaration order.
        fields: Vec<FieldSchema>,
    },
    /// An enum whose variants carry no data: a protobuf `enum`, the variant name in JSON.
    Enum {
        /// The variants.
        values: Vec<EnumValue>,
    },
    /// An enum with data: a message with one `oneof` field per variant, externally tagged in
    /// JSON (`"Unit"`, `{"Newtype": value}`, `{"Fields": {...}}`).
    OneOf {
        /// The variants.
        variants: Vec<VariantSchema>,
    },
}

/// One variant of a unit-only enum.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct EnumValue {
    /// The variant name (its JSON form).
    pub name: String,
    /// Its number (its Protobuf and MessagePack form).
    pub number: i32,
    /// Its doc comment.
    pub doc: String,
    /// Whether it is the `#[wirecall(other)]` variant, which unknown values decode to.
    pub other: bool,
}

/// One variant of an enum with data.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct VariantSchema {
    /// The variant name (its JSON tag).
    pub name: String,
    /// Its field number in the `oneof`.
    pub tag: u32,
    /// Its doc comment.
    pub doc: String,
    /// What it carries.
    pub shape: VariantShape,
    /// Whether it is the `#[wirecall(other)]` variant, which unknown variants decode to.
    pub other: bool,
}

/// What a variant of an enum with data carries.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub enum VariantShape {
    /// Nothing: an empty message on the Protobuf wire, the bare name in JSON.
    Unit,
    /// One unnamed value: the value itself.
    Newtype(TypeRef),
    /// Several values (a tuple variant, `named` false, fields named `0`, `1`, ...) or named
    /// fields: a nested message with fields 1..n.
    Fields {
        /// Whether the fields have names (a JSON object) or not (a JSON array).
        named: bool,
        /// The fields.
        fields: Vec<FieldSchema>,
    },
}

/// Why `describe` or `descriptors` failed.
#[wirecall_macros::message]
#[derive(Clone, PartialEq, thiserror::Error)]
pub enum ReflectionError {
    /// The server serves no service by that name.
    #[error("this server serves no service named `{0}`")]
    UnknownService(String),
    /// The service has no Protobuf form: it does not speak Protobuf, does not describe its
    /// types, or its types cannot be written as one `.proto` file.
    #[error("service `{service}` has no Protobuf form: {reason}")]
    NoProtobufForm {
        /// The service.
        service: String,
        /// Why.
        reason: String,
    },
}
