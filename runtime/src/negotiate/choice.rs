//! Choosing a connection's codec, without I/O: whose preference wins, which codec two lists
//! share, and whether a configured list can go into a hello at all.

use super::codec_list::CodecList;
use crate::codec::Codec;
use crate::wire::MAX_CODECS;

/// Which side's preference order wins when several codecs are common.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Preference {
    /// The first codec in the client's list that the server allows (the default: the client
    /// knows its payloads best).
    #[default]
    Client,
    /// The first codec in the server's list that the client offered.
    Server,
}

/// Checks a configured codec list before it goes into hellos: a codec listed twice is a
/// mistake the hello cannot carry (the peer would refuse it), so it is refused here with the
/// configuration error, never silently cut or deduplicated.
pub(crate) fn check_codec_list(codecs: &[Codec]) -> Result<(), String> {
    for (i, codec) in codecs.iter().enumerate() {
        if codecs[..i].contains(codec) {
            return Err(format!(
                "the codec list {} names {} twice; list each codec once",
                CodecList::of(codecs),
                codec.name()
            ));
        }
    }
    // Without duplicates a list is at most as long as `Codec::ALL`, far below the hello's
    // limit; the check keeps that true if codecs are ever added.
    if codecs.len() > MAX_CODECS {
        return Err(format!(
            "{} codecs listed; a hello carries at most {MAX_CODECS}",
            codecs.len()
        ));
    }
    Ok(())
}

/// Picks the codec for a connection, or `None` when the lists share none. Unknown ids in the
/// offer are ignored, so newer clients can offer codecs older servers lack.
pub fn negotiate_codec(
    offered: &[u8],
    supported: &[Codec],
    preference: Preference,
) -> Option<Codec> {
    match preference {
        Preference::Client => offered
            .iter()
            .filter_map(|id| Codec::from_id(*id))
            .find(|c| supported.contains(c)),
        Preference::Server => supported
            .iter()
            .copied()
            .find(|c| offered.contains(&c.id())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preference_decides_between_common_codecs() {
        let offered = [Codec::Json.id(), Codec::Protobuf.id()];
        let supported = [Codec::Protobuf, Codec::Json];
        assert_eq!(
            negotiate_codec(&offered, &supported, Preference::Client),
            Some(Codec::Json)
        );
        assert_eq!(
            negotiate_codec(&offered, &supported, Preference::Server),
            Some(Codec::Protobuf)
        );
        assert_eq!(
            negotiate_codec(&[99, 2], &supported, Preference::Client),
            None
        );
    }

    #[test]
    fn a_list_naming_each_codec_once_is_accepted() {
        assert_eq!(check_codec_list(&[Codec::Protobuf, Codec::Json]), Ok(()));
        assert_eq!(
            check_codec_list(&[]),
            Ok(()),
            "emptiness is the builder's check"
        );
    }

    #[test]
    fn a_codec_listed_twice_is_a_configuration_error_naming_it() {
        let err = check_codec_list(&[Codec::Json, Codec::Protobuf, Codec::Json]).unwrap_err();
        assert_eq!(
            err,
            "the codec list [json, protobuf, json] names json twice; list each codec once"
        );
    }

    #[test]
    fn unknown_offered_ids_are_skipped_by_either_preference() {
        let offered = [200, Codec::Protobuf.id()];
        for preference in [Preference::Client, Preference::Server] {
            assert_eq!(
                negotiate_codec(&offered, &[Codec::Json, Codec::Protobuf], preference),
                Some(Codec::Protobuf)
            );
        }
    }
}
