//! The one read loop both handshake drivers share: it feeds a hello parser exactly the bytes
//! it asks for, so that no byte of the frames after the hello is consumed.

use tokio::io::{AsyncRead, AsyncReadExt};

use super::error::NegotiationError;
use super::hello::Progress;

/// Reads exactly the bytes a hello parser asks for, from `stream` into `buf`, until it has
/// the whole hello. The outer error is the connection's; the inner one is the parser's, which
/// the server answers with a refusal.
pub(super) async fn read_hello<S, T>(
    stream: &mut S,
    buf: &mut [u8],
    parse: impl Fn(&[u8]) -> Result<Progress<T>, NegotiationError>,
) -> std::io::Result<Result<T, NegotiationError>>
where
    S: AsyncRead + Unpin,
{
    let mut filled = 0;
    loop {
        match parse(&buf[..filled]) {
            Ok(Progress::Done(hello, _)) => return Ok(Ok(hello)),
            Ok(Progress::Need(total)) => {
                // The parsers bound every length, so `buf` (sized for the longest hello)
                // always has room; refuse rather than trust that.
                let Some(more) = buf.get_mut(filled..total) else {
                    return Ok(Err(NegotiationError::BadExtensions(format!(
                        "a hello of {total} bytes is longer than any valid one"
                    ))));
                };
                stream.read_exact(more).await?;
                filled = total;
            }
            Err(error) => return Ok(Err(error)),
        }
    }
}
