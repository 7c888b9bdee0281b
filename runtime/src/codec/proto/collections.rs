//! `Option`, `Box`, lists, sets, maps and fixed-size arrays.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use bytes::{Buf, BufMut};
use prost::encoding::{skip_field, DecodeContext, WireType};
use prost::{DecodeError, Message};

use super::field::{encode_entry, encode_header, entry_len, header_len, merge_entry, ProtoField};

/// `Option<T>`: the field form is `T`'s value form when `Some` and nothing when `None`; the
/// value form is a message with `T` as optional field 1, so `Option<Option<T>>` and
/// `Vec<Option<T>>` keep every `None`.
impl<T: ProtoField> ProtoField for Option<T> {
    fn proto_default() -> Self {
        None
    }
    fn is_omitted(&self) -> bool {
        self.is_none()
    }
    fn encode_field(&self, tag: u32, buf: &mut impl BufMut) {
        if let Some(value) = self {
            value.encode_value(tag, buf);
        }
    }
    fn field_len(&self, tag: u32) -> usize {
        self.as_ref().map_or(0, |value| value.value_len(tag))
    }
    fn merge_field(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        self.get_or_insert_with(T::proto_default)
            .merge_value(wire_type, buf, ctx)
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        encode_header(tag, self.field_len(1), buf);
        self.encode_field(1, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        header_len(tag, self.field_len(1))
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // A present wrapper with no field 1 is `None`.
        *self = None;
        prost::encoding::message::merge(wire_type, &mut OptionBody(self), buf, ctx)
    }
}

struct OptionBody<'a, T>(&'a mut Option<T>);

impl<T: ProtoField> Message for OptionBody<'_, T> {
    fn encode_raw(&self, _buf: &mut impl BufMut) {}
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if tag == 1 {
            self.0.merge_field(wire_type, buf, ctx)
        } else {
            skip_field(wire_type, tag, buf, ctx)
        }
    }
    fn encoded_len(&self) -> usize {
        0
    }
    fn clear(&mut self) {}
}

/// `Box<T>` is `T` on the wire.
impl<T: ProtoField> ProtoField for Box<T> {
    const REPEATS: bool = T::REPEATS;
    fn proto_default() -> Self {
        Box::new(T::proto_default())
    }
    fn is_omitted(&self) -> bool {
        (**self).is_omitted()
    }
    fn encode_field(&self, tag: u32, buf: &mut impl BufMut) {
        (**self).encode_field(tag, buf);
    }
    fn field_len(&self, tag: u32) -> usize {
        (**self).field_len(tag)
    }
    fn merge_field(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        (**self).merge_field(wire_type, buf, ctx)
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        (**self).encode_value(tag, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        (**self).value_len(tag)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        (**self).merge_value(wire_type, buf, ctx)
    }
}

/// A list-like collection: its field form is a repeated field, its value form a wrapper.
macro_rules! list_field {
    ($ty:ty, [$($bounds:tt)*], [$($generics:tt)*], $new:expr) => {
        impl<T: ProtoField $($bounds)*, $($generics)*> ProtoField for $ty {
            const REPEATS: bool = true;
            fn proto_default() -> Self {
                $new
            }
            fn is_omitted(&self) -> bool {
                self.is_empty()
            }
            fn encode_field(&self, tag: u32, buf: &mut impl BufMut) {
                T::encode_list(self.iter(), tag, buf);
            }
            fn field_len(&self, tag: u32) -> usize {
                T::list_len(self.iter(), tag)
            }
            fn merge_field(
                &mut self,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                T::merge_list(self, wire_type, buf, ctx)
            }
            fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
                T::encode_list_value(self.iter(), tag, buf);
            }
            fn value_len(&self, tag: u32) -> usize {
                T::list_value_len(self.iter(), tag)
            }
            fn merge_value(
                &mut self,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                T::merge_list_value(self, wire_type, buf, ctx)
            }
        }
    };
}

list_field!(Vec<T>, [], [], Vec::new());
list_field!(BTreeSet<T>, [+ Ord], [], BTreeSet::new());

list_field!(
    HashSet<T, S>,
    [+ Eq + Hash],
    [S: BuildHasher + Default + Send + Sync],
    HashSet::default()
);

/// `[T; N]`: always its value form (a wrapped list, or `bytes` for `[u8; N]`), so that a
/// decoder sees the whole array at once; any other length than `N` is a decode error.
impl<T: ProtoField, const N: usize> ProtoField for [T; N] {
    fn proto_default() -> Self {
        std::array::from_fn(|_| T::proto_default())
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        T::encode_list_value(self.iter(), tag, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        T::list_value_len(self.iter(), tag)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut items = Vec::with_capacity(N);
        T::merge_list_value(&mut items, wire_type, buf, ctx)?;
        let len = items.len();
        *self = items.try_into().map_err(|_| {
            super::field::decode_error(format!("expected an array of {N} items, got {len}"))
        })?;
        Ok(())
    }
}

/// A map: a repeated entry message (key 1, value 2), as protobuf's `map<K, V>`. A map as a
/// value (in a list, an `Option` or another map) is wrapped like a list.
trait ProtoMap: Send + Sync + Sized {
    type Key: ProtoField;
    type Value: ProtoField;
    fn entries(&self) -> impl Iterator<Item = (&Self::Key, &Self::Value)>;
    fn insert_entry(&mut self, key: Self::Key, value: Self::Value);
}

impl<K, V, S> ProtoMap for HashMap<K, V, S>
where
    K: ProtoField + Eq + Hash,
    V: ProtoField,
    S: BuildHasher + Send + Sync,
{
    type Key = K;
    type Value = V;
    fn entries(&self) -> impl Iterator<Item = (&K, &V)> {
        self.iter()
    }
    fn insert_entry(&mut self, key: K, value: V) {
        self.insert(key, value);
    }
}

impl<K: ProtoField + Ord, V: ProtoField> ProtoMap for BTreeMap<K, V> {
    type Key = K;
    type Value = V;
    fn entries(&self) -> impl Iterator<Item = (&K, &V)> {
        self.iter()
    }
    fn insert_entry(&mut self, key: K, value: V) {
        self.insert(key, value);
    }
}

fn entry_body_len<K: ProtoField, V: ProtoField>(key: &K, value: &V) -> usize {
    key.field_len(1) + entry_len(value, 2)
}

fn encode_map<M: ProtoMap>(map: &M, tag: u32, buf: &mut impl BufMut) {
    for (key, value) in map.entries() {
        encode_header(tag, entry_body_len(key, value), buf);
        key.encode_field(1, buf);
        encode_entry(value, 2, buf);
    }
}

fn map_len<M: ProtoMap>(map: &M, tag: u32) -> usize {
    map.entries()
        .map(|(key, value)| header_len(tag, entry_body_len(key, value)))
        .sum()
}

fn merge_map_entry<M: ProtoMap>(
    map: &mut M,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    let mut entry = MapEntry {
        key: M::Key::proto_default(),
        value: M::Value::proto_default(),
    };
    prost::encoding::message::merge(wire_type, &mut entry, buf, ctx)?;
    map.insert_entry(entry.key, entry.value);
    Ok(())
}

struct MapEntry<K, V> {
    key: K,
    value: V,
}

impl<K: ProtoField, V: ProtoField> Message for MapEntry<K, V> {
    fn encode_raw(&self, _buf: &mut impl BufMut) {}
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => self.key.merge_field(wire_type, buf, ctx),
            2 => merge_entry(&mut self.value, wire_type, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }
    fn encoded_len(&self) -> usize {
        0
    }
    fn clear(&mut self) {}
}

/// Decode-only view of a wrapped map (a map in its value form).
struct MapBody<'a, M>(&'a mut M);

impl<M: ProtoMap> Message for MapBody<'_, M> {
    fn encode_raw(&self, _buf: &mut impl BufMut) {}
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if tag == 1 {
            merge_map_entry(self.0, wire_type, buf, ctx)
        } else {
            skip_field(wire_type, tag, buf, ctx)
        }
    }
    fn encoded_len(&self) -> usize {
        0
    }
    fn clear(&mut self) {}
}

macro_rules! map_field {
    ($ty:ty, [$($bounds:tt)*], $new:expr) => {
        impl<$($bounds)*> ProtoField for $ty {
            const REPEATS: bool = true;
            fn proto_default() -> Self {
                $new
            }
            fn is_omitted(&self) -> bool {
                self.is_empty()
            }
            fn encode_field(&self, tag: u32, buf: &mut impl BufMut) {
                encode_map(self, tag, buf);
            }
            fn field_len(&self, tag: u32) -> usize {
                map_len(self, tag)
            }
            fn merge_field(
                &mut self,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                merge_map_entry(self, wire_type, buf, ctx)
            }
            fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
                encode_header(tag, map_len(self, 1), buf);
                encode_map(self, 1, buf);
            }
            fn value_len(&self, tag: u32) -> usize {
                header_len(tag, map_len(self, 1))
            }
            fn merge_value(
                &mut self,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                prost::encoding::message::merge(wire_type, &mut MapBody(self), buf, ctx)
            }
        }
    };
}

map_field!(
    HashMap<K, V, S>,
    [K: ProtoField + Eq + Hash, V: ProtoField, S: BuildHasher + Default + Send + Sync],
    HashMap::default()
);
map_field!(
    BTreeMap<K, V>,
    [K: ProtoField + Ord, V: ProtoField],
    BTreeMap::new()
);
