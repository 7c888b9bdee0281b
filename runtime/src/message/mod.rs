//! The wire messages every method's call travels in, shared by the generated code of all
//! services: how a reply's result is read back.

use crate::codec::CodecError;
use crate::error::Error;

/// Turns the two optional fields of a result reply into the caller's nested result. A reply
/// with neither field set is a decode error: the peer sent something that is not a result.
pub fn result_from_parts<T, E>(ok: Option<T>, err: Option<E>) -> Result<Result<T, E>, Error> {
    match (ok, err) {
        (_, Some(err)) => Ok(Err(err)),
        (Some(ok), None) => Ok(Ok(ok)),
        (None, None) => Err(Error::Codec(CodecError::EmptyResult)),
    }
}
