//! The media type a method call must declare: `application/json`, or `application/x-ndjson`
//! for a method that takes an upload. Anything else, or none, is refused with 415.
//!
//! A browser sends a cross-site POST without asking first only with a "simple" content type
//! (`text/plain`, a form's types) or none: requiring these types makes it ask the gateway
//! first (a CORS preflight), which the gateway answers only for the origins it is given
//! (`cors.rs`), so a page elsewhere cannot call a method through a visitor's browser.

use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderMap;

use crate::ndjson::NDJSON;
use crate::GatewayError;

/// The media type of a call's JSON body.
pub const JSON: &str = "application/json";

/// Whether the request's `Content-Type` is `expected` (parameters such as `charset` aside,
/// case aside); if not, the 415 to answer.
pub(crate) fn require(headers: &HeaderMap, expected: &'static str) -> Result<(), GatewayError> {
    let declared = headers.get(CONTENT_TYPE);
    let essence = declared
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(str::trim);
    if essence.is_some_and(|essence| essence.eq_ignore_ascii_case(expected)) {
        return Ok(());
    }
    let found = match declared {
        None => "none".to_owned(),
        Some(value) => format!("`{}`", String::from_utf8_lossy(value.as_bytes())),
    };
    Err(GatewayError::UnsupportedMediaType { expected, found })
}

/// What an upload's `Content-Type` may be, as the 415 says.
const UPLOAD_TYPES: &str = "application/x-ndjson or application/json";

/// Refuses an upload whose `Content-Type` is neither newline-delimited JSON nor JSON (the
/// whole upload as one array); returns which it is.
pub(crate) fn require_upload(headers: &HeaderMap) -> Result<&'static str, GatewayError> {
    for media_type in [NDJSON, JSON] {
        if require(headers, media_type).is_ok() {
            return Ok(media_type);
        }
    }
    require(headers, UPLOAD_TYPES).map(|()| NDJSON)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn with(content_type: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn the_type_passes_with_parameters_and_in_any_case() {
        for value in [
            "application/json",
            "Application/JSON; charset=utf-8",
            " application/json ;x=1",
        ] {
            assert!(require(&with(Some(value)), JSON).is_ok(), "{value}");
        }
    }

    #[test]
    fn the_types_a_browser_sends_unasked_are_refused() {
        for value in [
            None,
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonx"),
        ] {
            assert!(
                matches!(
                    require(&with(value), JSON),
                    Err(GatewayError::UnsupportedMediaType { .. })
                ),
                "{value:?}"
            );
        }
    }

    #[test]
    fn an_upload_is_ndjson_or_one_json_array() {
        assert_eq!(
            require_upload(&with(Some("application/x-ndjson"))).ok(),
            Some(NDJSON)
        );
        assert_eq!(
            require_upload(&with(Some("application/json; charset=utf-8"))).ok(),
            Some(JSON)
        );
        for value in [None, Some("text/plain")] {
            match require_upload(&with(value)) {
                Err(GatewayError::UnsupportedMediaType { expected, .. }) => {
                    assert_eq!(expected, UPLOAD_TYPES)
                }
                other => panic!("{value:?}: {other:?}"),
            }
        }
    }
}
