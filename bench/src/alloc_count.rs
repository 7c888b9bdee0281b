//! The heap-allocation counter behind W8: the binary's global allocator is [`Counting`],
//! which forwards everything to [`System`] and, once [`enable`] has been called in a
//! process, counts every `alloc`, `alloc_zeroed` and `realloc` (not `dealloc`). Until then
//! it only reads one flag, so the other cells run as they would on the system allocator.

// `GlobalAlloc` is an unsafe trait; this module is the bench crate's only unsafe code.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Starts counting in this process.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Allocations counted since [`enable`].
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

fn count() {
    if ENABLED.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

/// [`System`], counting allocations.
pub struct Counting;

// SAFETY: every method passes its arguments unchanged to the same method of `System` and
// returns its result unchanged, so `System`'s implementation of the contract is this one's.
// The only other work is relaxed loads and adds on static atomics, which neither allocate
// nor unwind.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{fanly, UserModel};

    /// Allocations of `work`, the fewest of several tries: the other tests run on threads of
    /// their own meanwhile, and they can only add to the count.
    fn fewest_allocations(mut work: impl FnMut()) -> u64 {
        enable();
        (0..50)
            .map(|_| {
                let before = allocations();
                work();
                allocations() - before
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn counts_once_enabled() {
        assert_eq!(
            fewest_allocations(|| drop(std::hint::black_box(Box::new(7_u64)))),
            1
        );
    }

    /// W8 subtracts three allocations per call for the user's values; each of them is one
    /// `String` however the user is built or decoded.
    #[test]
    fn a_user_is_one_allocation_built_or_decoded() {
        assert_eq!(
            fewest_allocations(|| drop(std::hint::black_box(fanly()))),
            1
        );
        for codec in [
            wirecall::Codec::Json,
            wirecall::Codec::MessagePack,
            wirecall::Codec::Protobuf,
        ] {
            let mut encoded = bytes::BytesMut::new();
            codec.encode(&fanly(), &mut encoded).unwrap();
            // As the runtime decodes: from the frame's `Bytes`.
            let encoded = encoded.freeze();
            let decode = || drop(codec.decode_shared::<UserModel>(encoded.clone()).unwrap());
            assert_eq!(fewest_allocations(decode), 1, "{codec:?}");
        }
        let encoded = prost::Message::encode_to_vec(&fanly());
        let decode = || drop(<UserModel as prost::Message>::decode(&encoded[..]).unwrap());
        assert_eq!(fewest_allocations(decode), 1, "prost, as tonic decodes");
    }
}
