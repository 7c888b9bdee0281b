//! Headers both ways: the caller's custom headers as the call's metadata, the reply's
//! metadata as response headers, and the token in `authorization`.

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::metadata::Metadata;

/// Headers that are gRPC's or HTTP's own, never a call's metadata.
fn reserved(name: &str) -> bool {
    name.starts_with("grpc-")
        || name.ends_with("-bin")
        || matches!(
            name,
            "content-type"
                | "te"
                | "authorization"
                | "content-length"
                | "connection"
                | "user-agent"
        )
}

/// The caller's custom headers as metadata. Binary (`-bin`) headers, values that are not
/// text and whatever is over wirecall's metadata limits are left out: the handler sees what
/// a wirecall caller could have sent.
pub(crate) fn metadata_of(headers: &HeaderMap) -> Metadata {
    let mut metadata = Metadata::new();
    for (name, value) in headers {
        let name = name.as_str();
        if reserved(name) {
            continue;
        }
        if let Ok(value) = value.to_str() {
            if metadata.insert(name, value).is_err() {
                tracing::debug!(header = name, "gRPC header left out of the call's metadata");
            }
        }
    }
    metadata
}

/// Adds a reply's metadata to response headers; an entry that is not a valid header is left
/// out (logged).
pub(crate) fn write_metadata(metadata: &Metadata, headers: &mut HeaderMap) {
    for (key, value) in metadata.iter() {
        let header = (
            HeaderName::from_bytes(key.to_ascii_lowercase().as_bytes()),
            HeaderValue::from_str(value),
        );
        match header {
            (Ok(name), Ok(value)) if !reserved(name.as_str()) => {
                headers.append(name, value);
            }
            _ => tracing::debug!(key, "reply metadata left out of the gRPC headers"),
        }
    }
}

/// The token a caller presents: `authorization: Bearer TOKEN`.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(http::header::AUTHORIZATION)?.as_bytes();
    let scheme = value.get(..7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| value[7..].trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_headers_become_metadata_and_reserved_ones_do_not() {
        let mut headers = HeaderMap::new();
        headers.insert("x-tenant", HeaderValue::from_static("acme"));
        headers.insert("traceparent", HeaderValue::from_static("00-abc"));
        headers.insert("grpc-timeout", HeaderValue::from_static("1S"));
        headers.insert("trace-bin", HeaderValue::from_static("AAEC"));
        headers.insert("authorization", HeaderValue::from_static("Bearer t"));
        headers.insert("content-type", HeaderValue::from_static("application/grpc"));
        let metadata = metadata_of(&headers);
        assert_eq!(metadata.get("x-tenant"), Some("acme"));
        assert_eq!(metadata.get("traceparent"), Some("00-abc"));
        assert_eq!(metadata.iter().count(), 2);
    }

    #[test]
    fn the_token_is_read_from_a_bearer_authorization() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token(&headers), None);
        headers.insert("authorization", HeaderValue::from_static("Bearer s3cret"));
        assert_eq!(bearer_token(&headers), Some(&b"s3cret"[..]));
        headers.insert("authorization", HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer_token(&headers), None);
    }
}
