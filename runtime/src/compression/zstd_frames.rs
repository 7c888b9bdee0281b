//! zstd through per-thread contexts: a context costs an allocation of up to a few hundred
//! KiB, too much per call and too much per idle connection, so each thread keeps one
//! compressor and one decompressor and reuses them.

use std::cell::RefCell;

use super::error::DecompressError;

thread_local! {
    /// This thread's compressor, and the level it is set to.
    static COMPRESSOR: RefCell<Option<(zstd::bulk::Compressor<'static>, i32)>> =
        const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
    /// Where a frame is compressed before it is copied over its uncompressed payload.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Scratch buffers larger than this are freed after use rather than kept for the thread.
const KEEP_SCRATCH_UP_TO: usize = 256 * 1024;

/// The compressed bytes of one frame, in this thread's scratch buffer, which goes back to
/// the thread when this is dropped.
pub(super) struct Compressed(Vec<u8>);

impl std::ops::Deref for Compressed {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Compressed {
    fn drop(&mut self) {
        let mut scratch = std::mem::take(&mut self.0);
        if scratch.capacity() <= KEEP_SCRATCH_UP_TO {
            scratch.clear();
            SCRATCH.set(scratch);
        }
    }
}

/// Compresses `source` at `level`; `None` when zstd failed, which the caller treats as
/// "send it uncompressed".
pub(super) fn compress(level: i32, source: &[u8]) -> Option<Compressed> {
    COMPRESSOR.with_borrow_mut(|slot| {
        let compressor = match slot {
            Some((compressor, current)) => {
                if *current != level {
                    compressor.set_compression_level(level).ok()?;
                    *current = level;
                }
                compressor
            }
            None => {
                &mut slot
                    .insert((zstd::bulk::Compressor::new(level).ok()?, level))
                    .0
            }
        };
        let mut scratch = Compressed(SCRATCH.take());
        scratch
            .0
            .reserve(zstd::zstd_safe::compress_bound(source.len()));
        compressor.compress_to_buffer(source, &mut scratch.0).ok()?;
        Some(scratch)
    })
}

/// Decompresses `data`, which must be exactly one zstd frame, into exactly `len` bytes,
/// allocating `len` bytes and no more.
pub(super) fn decompress(data: &[u8], len: usize) -> Result<Vec<u8>, DecompressError> {
    let frame_len = zstd::zstd_safe::find_frame_compressed_size(data)
        .map_err(|code| DecompressError::Corrupt(zstd::zstd_safe::get_error_name(code).into()))?;
    if frame_len != data.len() {
        return Err(DecompressError::Corrupt(format!(
            "{} bytes follow the zstd frame",
            data.len() - frame_len
        )));
    }
    let mut out = Vec::with_capacity(len);
    DECOMPRESSOR.with_borrow_mut(|slot| {
        let decompressor = match slot {
            Some(decompressor) => decompressor,
            None => slot.insert(
                zstd::bulk::Decompressor::new()
                    .map_err(|err| DecompressError::Corrupt(err.to_string()))?,
            ),
        };
        // Writes into `out`'s spare capacity, and fails rather than grow it.
        decompressor
            .decompress_to_buffer(data, &mut out)
            .map_err(|err| DecompressError::Corrupt(err.to_string()))
    })?;
    if out.len() != len {
        return Err(DecompressError::SizeMismatch {
            announced: len,
            actual: out.len(),
        });
    }
    Ok(out)
}
