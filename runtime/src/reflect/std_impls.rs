//! [`Reflect`] for the standard types that can travel (the same list `codec/proto`
//! implements `ProtoField` for).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::schema::TypeRef;
use super::type_registry::{Reflect, TypeRegistry};

macro_rules! leaf {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl Reflect for $ty {
            fn type_ref(_types: &mut TypeRegistry) -> TypeRef {
                TypeRef::$variant
            }
        }
    )*};
}

leaf! {
    bool => Bool,
    u8 => U8,
    u16 => U16,
    u32 => U32,
    u64 => U64,
    i8 => I8,
    i16 => I16,
    i32 => I32,
    i64 => I64,
    f32 => F32,
    f64 => F64,
    char => Char,
    String => String,
    Bytes => Bytes,
    Duration => Duration,
    SystemTime => Timestamp,
}

impl<T: Reflect> Reflect for Option<T> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::Option(Box::new(T::type_ref(types)))
    }
}

/// `Box<T>` is `T` on the wire.
impl<T: Reflect> Reflect for Box<T> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        T::type_ref(types)
    }
}

impl<T: Reflect> Reflect for Vec<T> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::List(Box::new(T::type_ref(types)))
    }
}

impl<T: Reflect> Reflect for BTreeSet<T> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::Set(Box::new(T::type_ref(types)))
    }
}

impl<T: Reflect, S> Reflect for HashSet<T, S> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::Set(Box::new(T::type_ref(types)))
    }
}

impl<T: Reflect, const N: usize> Reflect for [T; N] {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::Array {
            element: Box::new(T::type_ref(types)),
            len: N as u64,
        }
    }
}

impl<K: Reflect, V: Reflect> Reflect for BTreeMap<K, V> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::Map {
            key: Box::new(K::type_ref(types)),
            value: Box::new(V::type_ref(types)),
        }
    }
}

impl<K: Reflect, V: Reflect, S> Reflect for HashMap<K, V, S> {
    fn type_ref(types: &mut TypeRegistry) -> TypeRef {
        TypeRef::Map {
            key: Box::new(K::type_ref(types)),
            value: Box::new(V::type_ref(types)),
        }
    }
}

macro_rules! tuple {
    ($(($($name:ident),+))*) => {$(
        impl<$($name: Reflect),+> Reflect for ($($name,)+) {
            fn type_ref(types: &mut TypeRegistry) -> TypeRef {
                TypeRef::Tuple(vec![$($name::type_ref(types)),+])
            }
        }
    )*};
}

tuple! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
}
