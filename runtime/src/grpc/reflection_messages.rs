//! The messages of gRPC server reflection (`grpc/reflection/v1/reflection.proto`), the same
//! under `grpc.reflection.v1` and `grpc.reflection.v1alpha`: field numbers as in the
//! official file.

/// One question of a reflection stream.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ServerReflectionRequest {
    /// The host the client asked (echoed as `valid_host`).
    #[prost(string, tag = "1")]
    pub(crate) host: String,
    /// What is asked.
    #[prost(oneof = "MessageRequest", tags = "3, 4, 5, 6, 7")]
    pub(crate) message_request: Option<MessageRequest>,
}

/// The questions reflection answers.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum MessageRequest {
    /// A file by its name (`google/protobuf/duration.proto`).
    #[prost(string, tag = "3")]
    FileByFilename(String),
    /// The file that declares a service, method, message or enum, by full name.
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    /// The file that declares an extension.
    #[prost(message, tag = "5")]
    FileContainingExtension(ExtensionRequest),
    /// The extension numbers of a message, by full name.
    #[prost(string, tag = "6")]
    AllExtensionNumbersOfType(String),
    /// The services (the content is not read).
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// An extension of a message, by the message's full name and the extension's number.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ExtensionRequest {
    /// The extended message's full name.
    #[prost(string, tag = "1")]
    pub(crate) containing_type: String,
    /// The extension's field number.
    #[prost(int32, tag = "2")]
    pub(crate) extension_number: i32,
}

/// One answer of a reflection stream.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ServerReflectionResponse {
    /// The request's host.
    #[prost(string, tag = "1")]
    pub(crate) valid_host: String,
    /// The request answered.
    #[prost(message, optional, tag = "2")]
    pub(crate) original_request: Option<ServerReflectionRequest>,
    /// The answer.
    #[prost(oneof = "MessageResponse", tags = "4, 5, 6, 7")]
    pub(crate) message_response: Option<MessageResponse>,
}

/// The answers.
// Named after the oneof's fields in reflection.proto, as prost-build would name them.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum MessageResponse {
    /// Encoded `FileDescriptorProto`s: the file asked for, then the files it imports.
    #[prost(message, tag = "4")]
    FileDescriptorResponse(FileDescriptorResponse),
    /// The extension numbers of a message.
    #[prost(message, tag = "5")]
    AllExtensionNumbersResponse(ExtensionNumberResponse),
    /// The services.
    #[prost(message, tag = "6")]
    ListServicesResponse(ListServiceResponse),
    /// Why the question has no answer.
    #[prost(message, tag = "7")]
    ErrorResponse(ErrorResponse),
}

/// Serialized `FileDescriptorProto`s.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FileDescriptorResponse {
    /// Each an encoded `google.protobuf.FileDescriptorProto`.
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub(crate) file_descriptor_proto: Vec<Vec<u8>>,
}

/// The extension numbers of a message.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ExtensionNumberResponse {
    /// The message's full name.
    #[prost(string, tag = "1")]
    pub(crate) base_type_name: String,
    /// Its extension numbers.
    #[prost(int32, repeated, tag = "2")]
    pub(crate) extension_number: Vec<i32>,
}

/// The services a server serves.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ListServiceResponse {
    /// One per service.
    #[prost(message, repeated, tag = "1")]
    pub(crate) service: Vec<ServiceResponse>,
}

/// One service.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ServiceResponse {
    /// Its full name (`wirecall.services.UserService`).
    #[prost(string, tag = "1")]
    pub(crate) name: String,
}

/// A refused question.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ErrorResponse {
    /// A gRPC status code (`NOT_FOUND` is 5).
    #[prost(int32, tag = "1")]
    pub(crate) error_code: i32,
    /// Why.
    #[prost(string, tag = "2")]
    pub(crate) error_message: String,
}
