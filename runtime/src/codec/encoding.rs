//! [`Encoding`]: a codec as a connection of one protocol version writes it.

use bytes::BytesMut;

use super::{Codec, CodecError, WireMessage};

/// A codec as a connection of one protocol version writes it. Only JSON differs between
/// versions: below version 6 it writes byte strings as arrays of numbers, from version 6 on as
/// base64 text (wire chapter, "JSON"). Reading needs no version: a reader takes both forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Encoding {
    /// The connection's codec.
    pub(crate) codec: Codec,
    /// The connection's protocol version.
    version: u8,
}

impl Encoding {
    /// `codec` on a connection of protocol `version`.
    pub(crate) const fn new(codec: Codec, version: u8) -> Self {
        Self { codec, version }
    }

    /// Appends the encoding of `value` to `dst`.
    #[inline]
    pub(crate) fn encode<T: WireMessage>(
        self,
        value: &T,
        dst: &mut BytesMut,
    ) -> Result<(), CodecError> {
        match self.codec {
            #[cfg(feature = "json")]
            Codec::Json if self.version < crate::wire::JSON_BASE64_SINCE_VERSION => {
                super::json::encode(value, dst, super::json::BytesAs::Numbers)
            }
            codec => codec.encode(value, dst),
        }
    }
}

impl From<Codec> for Encoding {
    /// `codec` as this build's newest protocol version writes it.
    fn from(codec: Codec) -> Self {
        Self::new(codec, crate::wire::PROTOCOL_VERSION)
    }
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use bytes::{Bytes, BytesMut};

    use super::{Codec, Encoding};

    fn json_of(version: u8) -> String {
        let mut out = BytesMut::new();
        Encoding::new(Codec::Json, version)
            .encode(&Bytes::from_static(b"hi"), &mut out)
            .unwrap();
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn json_byte_strings_follow_the_connections_version() {
        assert_eq!(json_of(1), "[104,105]");
        assert_eq!(json_of(5), "[104,105]");
        assert_eq!(json_of(6), r#""aGk=""#);
        assert_eq!(json_of(crate::wire::PROTOCOL_VERSION), r#""aGk=""#);
    }
}
