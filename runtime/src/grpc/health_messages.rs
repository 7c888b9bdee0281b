//! The messages of `grpc.health.v1` (health.proto), for the door's health service.

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthCheckRequest {
    /// The service's full name; `""` is the server as a whole.
    #[prost(string, tag = "1")]
    pub(crate) service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthCheckResponse {
    /// A [`ServingStatus`].
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub(crate) status: i32,
}

/// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum ServingStatus {
    Unknown = 0,
    Serving = 1,
    NotServing = 2,
    /// Only for `Watch`: the service is not known.
    ServiceUnknown = 3,
}
