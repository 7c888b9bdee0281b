//! A request body read as lines, as its chunks arrive: the framing of an upload's
//! newline-delimited JSON (`upload.rs`).
//!
//! The body is hostile input of any length, so nothing here waits for its end: a line is
//! handed on as soon as its newline has come, and at most one line (plus the chunk that
//! carried its end) is held at a time. A line longer than the limit fails before more of it
//! is read.

use axum::body::{Body, BodyDataStream};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;

/// Why the next line could not be read.
#[derive(Debug)]
pub(crate) enum LineReadError {
    /// The line (numbered from 1) is longer than the limit.
    TooLong { line: u64, max: usize },
    /// The body broke off while the line was being read (the client went away, or sent a
    /// malformed chunk).
    Unreadable { line: u64, error: axum::Error },
}

/// The lines of one request body, numbered from 1 as an editor numbers them: blank lines
/// are skipped but counted.
pub(crate) struct BodyLines {
    chunks: BodyDataStream,
    buffered: BytesMut,
    /// How much of `buffered` is known to hold no newline.
    scanned: usize,
    /// The number of the last line taken from the body.
    number: u64,
    max_line: usize,
    body_ended: bool,
}

impl BodyLines {
    /// Reads `body` as lines of at most `max_line` bytes each (the line end not counted).
    pub(crate) fn new(body: Body, max_line: usize) -> Self {
        Self {
            chunks: body.into_data_stream(),
            buffered: BytesMut::new(),
            scanned: 0,
            number: 0,
            max_line,
            body_ended: false,
        }
    }

    /// The next line that is not blank, with its number and without its line end (`\n` or
    /// `\r\n`); `None` at the end of the body. A last line without a newline counts.
    pub(crate) async fn next_line(&mut self) -> Result<Option<(u64, Bytes)>, LineReadError> {
        loop {
            let Some(line) = self.next_raw_line().await? else {
                return Ok(None);
            };
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some((self.number, line)));
            }
        }
    }

    /// The next line, blank or not.
    async fn next_raw_line(&mut self) -> Result<Option<Bytes>, LineReadError> {
        loop {
            let newline = self.buffered[self.scanned..]
                .iter()
                .position(|&byte| byte == b'\n')
                .map(|at| self.scanned + at);
            if let Some(end) = newline {
                self.number += 1;
                self.scanned = 0;
                let mut line = self.buffered.split_to(end + 1);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.truncate(end - 1);
                }
                return self.within_limit(line.freeze()).map(Some);
            }
            self.scanned = self.buffered.len();
            // One byte over, for a `\r` whose `\n` is still to come.
            if self.buffered.len() > self.max_line.saturating_add(1) {
                // Refused before the rest of it is read: the line's end may never come.
                return Err(LineReadError::TooLong {
                    line: self.number + 1,
                    max: self.max_line,
                });
            }
            if self.body_ended {
                if self.buffered.is_empty() {
                    return Ok(None);
                }
                self.number += 1;
                self.scanned = 0;
                let last = self.buffered.split().freeze();
                return self.within_limit(last).map(Some);
            }
            match self.chunks.next().await {
                Some(Ok(chunk)) => self.buffered.extend_from_slice(&chunk),
                Some(Err(error)) => {
                    return Err(LineReadError::Unreadable {
                        line: self.number + 1,
                        error,
                    })
                }
                None => self.body_ended = true,
            }
        }
    }

    fn within_limit(&self, line: Bytes) -> Result<Bytes, LineReadError> {
        if line.len() > self.max_line {
            return Err(LineReadError::TooLong {
                line: self.number,
                max: self.max_line,
            });
        }
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that arrives in the given chunks.
    fn body(chunks: &[&'static str]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk.as_bytes())))
            .collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    async fn all_lines(lines: &mut BodyLines) -> Vec<(u64, String)> {
        let mut read = Vec::new();
        while let Some((number, line)) = lines.next_line().await.unwrap() {
            read.push((number, String::from_utf8(line.to_vec()).unwrap()));
        }
        read
    }

    #[tokio::test]
    async fn lines_split_across_chunks_are_joined_and_blank_ones_counted() {
        let mut lines = BodyLines::new(body(&["{}\n1", "2\n\n", "\r\n 3\r", "\n4"]), 100);
        assert_eq!(
            all_lines(&mut lines).await,
            [
                (1, "{}".to_owned()),
                (2, "12".to_owned()),
                (5, " 3".to_owned()),
                (6, "4".to_owned()),
            ]
        );
    }

    #[tokio::test]
    async fn an_empty_body_has_no_lines() {
        let mut lines = BodyLines::new(body(&[]), 100);
        assert!(all_lines(&mut lines).await.is_empty());
        let mut lines = BodyLines::new(body(&["\n", "  \n"]), 100);
        assert!(all_lines(&mut lines).await.is_empty());
    }

    #[tokio::test]
    async fn a_line_at_the_limit_passes_and_one_past_it_fails_with_its_number() {
        let mut lines = BodyLines::new(body(&["1234\n", "12345\n"]), 4);
        assert_eq!(lines.next_line().await.unwrap().unwrap().0, 1);
        assert!(matches!(
            lines.next_line().await,
            Err(LineReadError::TooLong { line: 2, max: 4 })
        ));
    }

    /// A line with no end in sight fails once it passes the limit, without waiting for the
    /// rest of the body.
    #[tokio::test]
    async fn an_endless_line_fails_without_reading_the_whole_body() {
        let endless =
            futures::stream::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from_static(b"xxxx")));
        let mut lines = BodyLines::new(Body::from_stream(endless), 1000);
        assert!(matches!(
            lines.next_line().await,
            Err(LineReadError::TooLong { line: 1, .. })
        ));
    }

    #[tokio::test]
    async fn a_last_line_without_a_newline_is_held_to_the_limit() {
        let mut lines = BodyLines::new(body(&["1\n", "12345"]), 4);
        assert_eq!(lines.next_line().await.unwrap().unwrap().0, 1);
        assert!(matches!(
            lines.next_line().await,
            Err(LineReadError::TooLong { line: 2, max: 4 })
        ));
    }
}
