//! Which format a stream's answer takes, from the request's `Accept` header (RFC 9110,
//! section 12.5.1): newline-delimited JSON or Server-Sent Events.
//!
//! Each format gets the quality of the most specific media range that matches it
//! (`text/event-stream` before `text/*` before `*/*`), and the better one wins. NDJSON wins
//! ties, so it stays the answer to a request without `Accept`, with `*/*`, or with only types
//! the gateway cannot answer (such as `application/json`): the RFC lets a server disregard an
//! `Accept` it cannot satisfy, and a stream answered in a format nobody asked for is more
//! useful than a 406 to a client that has streamed NDJSON so far.

use axum::http::header::ACCEPT;
use axum::http::HeaderMap;

use crate::event_stream::EVENT_STREAM;
use crate::ndjson::NDJSON;

/// The body format of a stream's answer (a server stream's, or a bidirectional method's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamFormat {
    /// `application/x-ndjson`: one item per line, a failure as a last line `{"error": ...}`.
    Ndjson,
    /// `text/event-stream`: one event per item, then an `end` or an `error` event.
    EventStream,
}

impl StreamFormat {
    /// The format the request's `Accept` headers prefer; NDJSON unless they rank Server-Sent
    /// Events strictly higher.
    pub(crate) fn preferred_by(headers: &HeaderMap) -> Self {
        let ranges: Vec<MediaRange> = headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .filter_map(MediaRange::parse)
            .collect();
        if ranges.is_empty() {
            return Self::Ndjson;
        }
        let quality = |media_type: &str| {
            ranges
                .iter()
                .filter_map(|range| range.specificity(media_type).map(|rank| (rank, range.q)))
                .max_by_key(|(rank, _)| *rank)
                .map_or(0, |(_, q)| q)
        };
        if quality(EVENT_STREAM) > quality(NDJSON) {
            Self::EventStream
        } else {
            Self::Ndjson
        }
    }
}

/// One element of an `Accept` header: `type/subtype`, `type/*` or `*/*`, and its weight.
struct MediaRange {
    /// Lowercase, as media type names are case-insensitive.
    type_: String,
    subtype: String,
    /// The weight in thousandths, as the RFC's `qvalue` has at most three decimals.
    q: u16,
}

impl MediaRange {
    /// `type/subtype *( OWS ";" OWS parameter )`, its weight the parameter `q` (1 when
    /// absent); `None` for an element that is not a media range or has a malformed weight,
    /// which is skipped rather than failing the request. Other parameters are ignored: the
    /// gateway's formats take none.
    fn parse(element: &str) -> Option<Self> {
        let mut parts = element.split(';').map(str::trim);
        let (type_, subtype) = parts.next()?.split_once('/')?;
        let is_token = |name: &str| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte))
        };
        if !is_token(type_) || !is_token(subtype) || (type_ == "*" && subtype != "*") {
            return None;
        }
        let mut q = 1000;
        for parameter in parts {
            if let Some((name, value)) = parameter.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    q = parse_qvalue(value.trim())?;
                }
            }
        }
        Some(Self {
            type_: type_.to_ascii_lowercase(),
            subtype: subtype.to_ascii_lowercase(),
            q,
        })
    }

    /// How specifically this range names `media_type` (2 exactly, 1 as `type/*`, 0 as
    /// `*/*`), or `None` if it does not match it.
    fn specificity(&self, media_type: &str) -> Option<u8> {
        let (type_, subtype) = media_type.split_once('/')?;
        if self.type_ == "*" {
            Some(0)
        } else if self.type_ != type_ {
            None
        } else if self.subtype == "*" {
            Some(1)
        } else if self.subtype == subtype {
            Some(2)
        } else {
            None
        }
    }
}

/// A `qvalue` (`0`, `0.5`, `1.000`, ...) in thousandths, or `None` if it is not one.
fn parse_qvalue(q: &str) -> Option<u16> {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    if !matches!(whole, "0" | "1")
        || fraction.len() > 3
        || !fraction.bytes().all(|digit| digit.is_ascii_digit())
    {
        return None;
    }
    let thousandths: u16 = format!("{whole}{fraction:0<3}").parse().ok()?;
    (thousandths <= 1000).then_some(thousandths)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn format_for(accept: &[&str]) -> StreamFormat {
        let mut headers = HeaderMap::new();
        for value in accept {
            headers.append(ACCEPT, HeaderValue::from_str(value).unwrap());
        }
        StreamFormat::preferred_by(&headers)
    }

    #[test]
    fn no_accept_or_anything_is_ndjson() {
        assert_eq!(format_for(&[]), StreamFormat::Ndjson);
        assert_eq!(format_for(&["*/*"]), StreamFormat::Ndjson);
        assert_eq!(format_for(&[""]), StreamFormat::Ndjson);
    }

    #[test]
    fn asking_for_an_event_stream_gets_one() {
        assert_eq!(
            format_for(&["text/event-stream"]),
            StreamFormat::EventStream
        );
        assert_eq!(
            format_for(&["Text/Event-Stream"]),
            StreamFormat::EventStream
        );
        assert_eq!(format_for(&["text/*"]), StreamFormat::EventStream);
        assert_eq!(
            format_for(&["application/json, text/event-stream;q=0.1"]),
            StreamFormat::EventStream,
            "json cannot be answered, so the only acceptable format wins"
        );
    }

    #[test]
    fn the_higher_weight_wins_and_ndjson_wins_ties() {
        assert_eq!(
            format_for(&["text/event-stream;q=0.5, application/x-ndjson"]),
            StreamFormat::Ndjson
        );
        assert_eq!(
            format_for(&["application/x-ndjson;q=0.4", "text/event-stream ; q=0.6"]),
            StreamFormat::EventStream,
            "several Accept headers are one list"
        );
        assert_eq!(
            format_for(&["text/event-stream, application/x-ndjson"]),
            StreamFormat::Ndjson
        );
        assert_eq!(
            format_for(&["text/event-stream, */*"]),
            StreamFormat::Ndjson,
            "*/* accepts NDJSON as much"
        );
        assert_eq!(
            format_for(&["text/event-stream, */*;q=0.9"]),
            StreamFormat::EventStream
        );
    }

    #[test]
    fn the_most_specific_range_decides_a_formats_weight() {
        assert_eq!(
            format_for(&["text/*;q=0.9, text/event-stream;q=0, */*;q=0.1"]),
            StreamFormat::Ndjson,
            "q=0 refuses the event stream though text/* would take it"
        );
        assert_eq!(
            format_for(&["*/*;q=0.2, application/x-ndjson;q=0.1, text/event-stream;q=0.15"]),
            StreamFormat::EventStream
        );
    }

    #[test]
    fn malformed_ranges_and_weights_are_skipped() {
        assert_eq!(
            format_for(&["garbage, */event-stream, text/event-stream"]),
            StreamFormat::EventStream
        );
        assert_eq!(
            format_for(&["*/event-stream"]),
            StreamFormat::Ndjson,
            "`*/subtype` is not a media range"
        );
        assert_eq!(
            format_for(&["text/event-stream;q=2, application/x-ndjson;q=0.1"]),
            StreamFormat::Ndjson
        );
        assert_eq!(
            format_for(&["text/event-stream;q=0.5000"]),
            StreamFormat::Ndjson,
            "a qvalue has at most three decimals"
        );
    }

    #[test]
    fn qvalues_read_as_thousandths() {
        assert_eq!(parse_qvalue("1"), Some(1000));
        assert_eq!(parse_qvalue("1.000"), Some(1000));
        assert_eq!(parse_qvalue("0.25"), Some(250));
        assert_eq!(parse_qvalue("0."), Some(0));
        assert_eq!(parse_qvalue("1.5"), None);
        assert_eq!(parse_qvalue("-0"), None);
        assert_eq!(parse_qvalue(".5"), None);
        assert_eq!(parse_qvalue("0.x"), None);
    }
}
