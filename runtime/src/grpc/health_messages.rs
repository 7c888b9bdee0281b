//! The messages of the standard gRPC health service, `grpc.health.v1.Health`
//! (`grpc/health/v1/health.proto`): what `Check` and `Watch` read and answer.

/// A health check: `service` is a full gRPC service name, or `""` for the server as a whole.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthCheckRequest {
    /// The service asked about.
    #[prost(string, tag = "1")]
    pub(crate) service: String,
}

/// The answer to a health check.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthCheckResponse {
    /// A [`ServingStatus`] number.
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub(crate) status: i32,
}

/// `HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum ServingStatus {
    /// Not known.
    Unknown = 0,
    /// The service accepts calls.
    Serving = 1,
    /// The service does not accept calls now.
    NotServing = 2,
    /// `Watch` only: the server does not know the service (`Check` answers `NOT_FOUND`).
    ServiceUnknown = 3,
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::{HealthCheckRequest, HealthCheckResponse, ServingStatus};

    #[test]
    fn a_check_travels_as_health_proto_says() {
        let request = HealthCheckRequest {
            service: "acme.Users".into(),
        };
        // Field 1, length-delimited, then the name.
        assert_eq!(request.encode_to_vec()[..2], [0x0a, 10]);
        let response = HealthCheckResponse {
            status: ServingStatus::NotServing.into(),
        };
        assert_eq!(response.encode_to_vec(), [0x08, 2]);
        let decoded = HealthCheckResponse::decode(&[0x08, 3][..]).unwrap();
        assert_eq!(decoded.status(), ServingStatus::ServiceUnknown);
    }
}
