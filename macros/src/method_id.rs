//! Method ids: 64-bit FNV-1a over `"{service}.{method}"`.
//!
//! The runtime computes the same function (`wirecall::method_id`); the macro computes it at
//! compile time so the generated `match` compares against literals.

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The wire id of `method` in the service whose wire name is `service`.
pub fn method_id(service: &str, method: &str) -> u64 {
    let mut hash = FNV_OFFSET_BASIS;
    for byte in service
        .bytes()
        .chain(core::iter::once(b'.'))
        .chain(method.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::method_id;

    #[test]
    fn matches_reference_fnv1a_vector() {
        // Computed independently with a Python FNV-1a over b"UserService.get_user_id".
        assert_eq!(
            method_id("UserService", "get_user_id"),
            0x7894_313f_b377_3571
        );
    }

    #[test]
    fn separator_is_part_of_the_hash() {
        assert_ne!(method_id("ab", "c"), method_id("a", "bc"));
    }
}
