//! The items of an upload as JSON lines (one JSON value per line, blank lines skipped), read
//! from standard input or a file as a `Stream`.
//!
//! The stream reads the next line only when it is asked for the next item, and the runtime
//! asks only when the server has granted credit for one: a line typed (or produced by the
//! previous command of a pipe) after the call started is still sent, and a server that stops
//! reading pauses the reading instead of filling memory.

use std::fmt;
use std::io;
use std::path::PathBuf;

use futures::Stream;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

use crate::error::CliError;

/// Where the items of an upload come from: the `--upload` operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadSource {
    /// Standard input (`-`, or no `--upload`).
    Stdin,
    /// A file of JSON lines.
    File(PathBuf),
}

impl UploadSource {
    /// `-` is standard input; anything else is the path of a file.
    pub fn from_operand(operand: &str) -> Self {
        match operand {
            "-" => Self::Stdin,
            path => Self::File(PathBuf::from(path)),
        }
    }

    /// Whether the upload takes standard input (which then cannot carry the arguments).
    pub fn is_stdin(&self) -> bool {
        matches!(self, Self::Stdin)
    }

    /// Opens the source for reading; a file that cannot be opened is an input error.
    pub async fn open(&self) -> Result<Box<dyn AsyncBufRead + Send + Unpin>, CliError> {
        match self {
            Self::Stdin => Ok(Box::new(BufReader::new(tokio::io::stdin()))),
            Self::File(path) => {
                let file = tokio::fs::File::open(path).await.map_err(|error| {
                    CliError::Input(format!("cannot open --upload {}: {error}", path.display()))
                })?;
                Ok(Box::new(BufReader::new(file)))
            }
        }
    }
}

/// How error messages name the source: `standard input`, or the file's path.
impl fmt::Display for UploadSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdin => f.write_str("standard input"),
            Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Why a line of an upload could not become an item. Line numbers count from 1 and include
/// the blank lines, so that they match what an editor shows.
#[derive(Debug)]
pub enum LineError {
    /// The line is not one JSON value.
    NotJson {
        /// Its number.
        line: u64,
        /// What the JSON parser said.
        error: serde_json::Error,
    },
    /// The line could not be read (bytes that are not UTF-8, a failing device).
    Unreadable {
        /// Its number.
        line: u64,
        /// What the read said.
        error: io::Error,
    },
}

/// Each non-blank line of `reader` parsed as one JSON value, read as the stream is polled;
/// the stream ends at the end of the input. It yields at most one error, its last item.
pub fn json_lines<R>(reader: R) -> impl Stream<Item = Result<Value, LineError>> + Send + 'static
where
    R: AsyncBufRead + Send + Unpin + 'static,
{
    let lines = Some((reader.lines(), 0u64));
    futures::stream::unfold(lines, |state| async move {
        let (mut lines, mut number) = state?;
        loop {
            number += 1;
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(error) => {
                    return Some((
                        Err(LineError::Unreadable {
                            line: number,
                            error,
                        }),
                        None,
                    ))
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            return Some(match serde_json::from_str(&line) {
                Ok(value) => (Ok(value), Some((lines, number))),
                Err(error) => (
                    Err(LineError::NotJson {
                        line: number,
                        error,
                    }),
                    None,
                ),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use serde_json::json;

    use super::*;

    async fn read_all(input: &'static [u8]) -> Vec<Result<Value, LineError>> {
        json_lines(input).collect().await
    }

    #[tokio::test]
    async fn each_line_is_one_value_and_blank_lines_are_skipped() {
        let items = read_all(b"1\n\n  {\"n\": 2}\n\t\n\"three\"").await;
        let values: Vec<Value> = items.into_iter().map(|item| item.unwrap()).collect();
        assert_eq!(values, [json!(1), json!({"n": 2}), json!("three")]);
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_the_last_item_and_names_its_line() {
        let items = read_all(b"1\n\nthree\n4\n").await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(matches!(items[0], Ok(ref value) if value == &json!(1)));
        assert!(
            matches!(items[1], Err(LineError::NotJson { line: 3, .. })),
            "{items:?}"
        );
    }

    #[tokio::test]
    async fn two_values_on_one_line_are_not_one_json_value() {
        let items = read_all(b"1 2\n").await;
        assert!(
            matches!(items[..], [Err(LineError::NotJson { line: 1, .. })]),
            "{items:?}"
        );
    }

    #[tokio::test]
    async fn bytes_that_are_not_utf8_are_unreadable() {
        let items = read_all(b"1\n\xff\xfe\n").await;
        assert!(
            matches!(
                items[..],
                [Ok(_), Err(LineError::Unreadable { line: 2, .. })]
            ),
            "{items:?}"
        );
    }

    #[test]
    fn a_dash_is_standard_input_and_anything_else_a_file() {
        assert_eq!(UploadSource::from_operand("-"), UploadSource::Stdin);
        assert_eq!(
            UploadSource::from_operand("ticks.jsonl"),
            UploadSource::File(PathBuf::from("ticks.jsonl"))
        );
        assert_eq!(UploadSource::Stdin.to_string(), "standard input");
    }
}
