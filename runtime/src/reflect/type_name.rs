//! How a reflected type reads in Rust: `Option<u64>`, `Vec<User>`, `Map<String, u32>`. The
//! CLI's `describe`, the gateway's messages about a body that does not fit its method, and
//! anything else that shows a schema to a person print types this one way.

use std::fmt;

use super::schema::TypeRef;

/// Writes the type as a Rust programmer would (sets and maps by their kind, `Set` and `Map`,
/// since the schema does not say which collection the server uses).
impl fmt::Display for TypeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeRef::Bool => f.write_str("bool"),
            TypeRef::U8 => f.write_str("u8"),
            TypeRef::U16 => f.write_str("u16"),
            TypeRef::U32 => f.write_str("u32"),
            TypeRef::U64 => f.write_str("u64"),
            TypeRef::I8 => f.write_str("i8"),
            TypeRef::I16 => f.write_str("i16"),
            TypeRef::I32 => f.write_str("i32"),
            TypeRef::I64 => f.write_str("i64"),
            TypeRef::F32 => f.write_str("f32"),
            TypeRef::F64 => f.write_str("f64"),
            TypeRef::Char => f.write_str("char"),
            TypeRef::String => f.write_str("String"),
            TypeRef::Bytes => f.write_str("Bytes"),
            TypeRef::Duration => f.write_str("Duration"),
            TypeRef::Timestamp => f.write_str("SystemTime"),
            TypeRef::Option(inner) => write!(f, "Option<{inner}>"),
            TypeRef::List(inner) => write!(f, "Vec<{inner}>"),
            TypeRef::Set(inner) => write!(f, "Set<{inner}>"),
            TypeRef::Array { element, len } => write!(f, "[{element}; {len}]"),
            TypeRef::Map { key, value } => write!(f, "Map<{key}, {value}>"),
            TypeRef::Tuple(elements) => {
                f.write_str("(")?;
                for (index, element) in elements.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{element}")?;
                }
                f.write_str(")")
            }
            TypeRef::Named(name) => f.write_str(name),
            TypeRef::Opaque(rust) => f.write_str(rust),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TypeRef;

    #[test]
    fn types_read_as_rust_writes_them() {
        let map = TypeRef::Map {
            key: Box::new(TypeRef::String),
            value: Box::new(TypeRef::List(Box::new(TypeRef::Named("User".into())))),
        };
        assert_eq!(map.to_string(), "Map<String, Vec<User>>");
        let tuple = TypeRef::Tuple(vec![TypeRef::U8, TypeRef::Option(Box::new(TypeRef::Bytes))]);
        assert_eq!(tuple.to_string(), "(u8, Option<Bytes>)");
        let array = TypeRef::Array {
            element: Box::new(TypeRef::I64),
            len: 4,
        };
        assert_eq!(array.to_string(), "[i64; 4]");
        assert_eq!(TypeRef::Tuple(Vec::new()).to_string(), "()");
    }
}
