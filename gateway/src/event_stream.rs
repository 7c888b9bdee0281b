//! A stream's answer as Server-Sent Events (`text/event-stream`, the HTML standard's
//! "Server-sent events" section), for a request whose `Accept` prefers them (`accept.rs`).
//!
//! Each item is one unnamed event (a `message` to an `EventSource`) whose `data` is the item's
//! JSON on one line. The stream's end is an event `end` with data `{}`, its failure an event
//! `error` whose data is the body a unary call would have answered (`{"error": name, "code":
//! ..., "message": ...}`, what the NDJSON answer's last line holds under `"error"`); exactly
//! one of them is last, so a body that stops without either was cut off. (`end` carries `{}`
//! because a browser drops an event without data.) The server's trailers, if it sent any, come
//! right before that last event as an event `trailers` whose data is an object of strings.
//! While the stream is idle a comment line is
//! sent at the keep-alive interval, so that a proxy that closes idle connections leaves it open.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};

use crate::answer_part::AnswerPart;

/// The media type of Server-Sent Events.
pub const EVENT_STREAM: &str = "text/event-stream";

/// The name of the event that ends a stream that went well.
const END_EVENT: &str = "end";

/// The name of the event that carries the server's trailers, right before `end` or `error`.
const TRAILERS_EVENT: &str = "trailers";

/// The name of the event that ends a stream that failed.
const ERROR_EVENT: &str = "error";

/// The response whose body is `parts` as events, with a keep-alive comment after each
/// `keep_alive` without an event (none if it is zero).
pub(crate) fn response<S>(parts: S, keep_alive: Duration) -> Response
where
    S: Stream<Item = AnswerPart> + Send + 'static,
{
    let events = parts.map(|part| {
        Ok::<_, Infallible>(match part {
            AnswerPart::Item(value) => Event::default().data(value.to_string()),
            AnswerPart::Trailers(trailers) => Event::default()
                .event(TRAILERS_EVENT)
                .data(trailers.to_string()),
            AnswerPart::End => Event::default().event(END_EVENT).data("{}"),
            AnswerPart::Failed(error) => Event::default()
                .event(ERROR_EVENT)
                .data(error.body().to_string()),
        })
    });
    let events = Sse::new(events);
    if keep_alive.is_zero() {
        events.into_response()
    } else {
        events
            .keep_alive(KeepAlive::new().interval(keep_alive))
            .into_response()
    }
}
