//! The model's types: a `.proto` file's services, messages, fields and enums, as
//! [`build`](super::build) decides them and the renderers read them.

/// Everything one `.proto` file declares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoModel {
    /// The protobuf package.
    pub(crate) package: String,
    /// Services left out: they do not speak Protobuf or do not describe their types.
    pub(crate) skipped: Vec<String>,
    /// The well-known files the model uses, Duration before Timestamp.
    pub(crate) imports: Vec<WellKnown>,
    /// The exported services, each with the messages of its methods.
    pub(crate) services: Vec<ProtoService>,
    /// The `#[message]` types, in the order they were first met.
    pub(crate) types: Vec<ProtoType>,
    /// The wrapper messages (`Option_T`, `List_T`, `Map_K_V`, `Tuple_A_B`, `Empty`), each
    /// declared after everything it refers to.
    pub(crate) wrappers: Vec<ProtoMessage>,
}

/// A well-known Protobuf type the model refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WellKnown {
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
}

impl WellKnown {
    /// The file that declares it, as an import names it.
    pub(crate) fn file(self) -> &'static str {
        match self {
            WellKnown::Duration => "google/protobuf/duration.proto",
            WellKnown::Timestamp => "google/protobuf/timestamp.proto",
        }
    }

    /// Its full type name.
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            WellKnown::Duration => "google.protobuf.Duration",
            WellKnown::Timestamp => "google.protobuf.Timestamp",
        }
    }
}

/// One exported service.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoService {
    /// Its protobuf name (the wire name with every other character than letters and digits
    /// made `_`).
    pub(crate) name: String,
    /// The trait's doc comment.
    pub(crate) doc: String,
    /// The methods, in declaration order.
    pub(crate) methods: Vec<ProtoMethod>,
    /// The messages of its methods: per method `_Args`, `_Reply`, then `_Upload` if any.
    pub(crate) messages: Vec<ProtoMessage>,
}

/// One `rpc`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoMethod {
    /// The method's wire name.
    pub(crate) name: String,
    /// Its doc comment.
    pub(crate) doc: String,
    /// `#[oneway]`.
    pub(crate) oneway: bool,
    /// `#[idempotent]`.
    pub(crate) idempotent: bool,
    /// The request message (a name in the file's package).
    pub(crate) input: String,
    /// The reply message.
    pub(crate) output: String,
    /// The method takes an upload: the requests are a stream.
    pub(crate) client_streaming: bool,
    /// The method answers with a stream.
    pub(crate) server_streaming: bool,
}

/// A top-level user type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProtoType {
    /// A struct or an enum with data.
    Message(ProtoMessage),
    /// A unit-only enum.
    Enum(ProtoEnum),
}

/// A message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoMessage {
    /// Its name in its scope.
    pub(crate) name: String,
    /// A comment written above it.
    pub(crate) doc: String,
    /// Messages declared inside it (the variants with fields of an enum with data).
    pub(crate) nested: Vec<ProtoMessage>,
    /// Its fields, in declaration order.
    pub(crate) fields: Vec<ProtoField>,
    /// When set, every field is a member of this `oneof`.
    pub(crate) oneof: Option<String>,
}

/// A field of a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoField {
    /// Its name.
    pub(crate) name: String,
    /// Its field number.
    pub(crate) number: u32,
    /// Its label.
    pub(crate) label: Label,
    /// Its type.
    pub(crate) ty: FieldType,
    /// Its doc comment.
    pub(crate) doc: String,
}

/// How many times a field occurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    /// A plain proto3 field (a map field too: a map is its own kind of field).
    Singular,
    /// `optional`: present or absent.
    Optional,
    /// `repeated`.
    Repeated,
}

/// The type of a field, or of one key or value of a map.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FieldType {
    /// A scalar.
    Scalar(Scalar),
    /// A message or enum, by the name the text writes.
    Named(String),
    /// `map<key, value>`.
    Map {
        /// The key type.
        key: Box<FieldType>,
        /// The value type.
        value: Box<FieldType>,
    },
}

/// The scalar types wirecall's values travel as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// `bool`.
    Bool,
    /// `uint32`.
    Uint32,
    /// `uint64`.
    Uint64,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
}

impl Scalar {
    /// Its name in `.proto` text.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::Uint32 => "uint32",
            Scalar::Uint64 => "uint64",
            Scalar::Int32 => "int32",
            Scalar::Int64 => "int64",
            Scalar::Float => "float",
            Scalar::Double => "double",
            Scalar::String => "string",
            Scalar::Bytes => "bytes",
        }
    }
}

/// A unit-only enum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoEnum {
    /// Its name.
    pub(crate) name: String,
    /// Its doc comment.
    pub(crate) doc: String,
    /// Its values, the zero value first (proto3 wants it there).
    pub(crate) values: Vec<ProtoEnumValue>,
}

/// One value of an enum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtoEnumValue {
    /// Its name, prefixed with the enum's (`COLOUR_BLUE`): enum values share their file's
    /// scope, so two enums could not both have `BLUE` otherwise.
    pub(crate) name: String,
    /// Its number.
    pub(crate) number: i32,
    /// Its doc comment.
    pub(crate) doc: String,
}
