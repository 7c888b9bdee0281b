//! Reading frames off a connection without holding a read buffer while it is idle.
//!
//! Most of a server's connections are idle most of the time, and so are most of the
//! connections of a client that holds many; a read buffer per connection is then much of what
//! an idle connection costs. A [`FrameReader`] lets go of its buffer when the connection has
//! nothing left to read ([`FrameReader::park`]), into a small per-thread pool, and takes one
//! from the pool when bytes arrive: idle connections hold no buffer, and a busy connection
//! still reads into a buffer it already has. The seed's socket servers call this buffer
//! pooling.
//!
//! A buffer still shared with a frame's payload when the connection goes idle (a reply its
//! caller is still decoding, a request a spawned call still holds) is kept, and the next read
//! reuses it in place once the payload is gone: letting it go would cost an allocation per
//! call. So a client, whose replies are usually still shared when its reader waits again,
//! mostly keeps its buffer; its buffers start at 1 KiB (tokio-util's `FramedRead` starts at
//! 8 KiB) and grow when a read fills them, so a pipelining connection soon reads in large
//! buffers while an idle one holds a small one ([`ReadPolicy`]).
//!
//! A connection in a burst whose frames arrive one per read (the sender is the slower side)
//! reads into buffers with room for several frames ([`FRAMES_PER_BUFFER`]) and keeps them
//! between reads: with room for one frame and a half, and the rest of the buffer handed to
//! the pool whenever it waited, it allocated a buffer and copied most of a frame for nearly
//! every frame it read.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::thread::LocalKey;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::Decoder;

use crate::transport::frame::{Frame, FrameCodec, FrameError, FRAME_OVERHEAD};
use crate::transport::spare_buffers::SpareBuffers;

/// The capacity of a pooled server read buffer: room for a few small frames per read. The
/// decoder grows a buffer beyond this for large frames (and drops it again afterwards).
pub(crate) const READ_BUFFER: usize = 512;

/// The capacity of a pooled client read buffer. The decoder doubles a buffer that a read
/// filled, so a connection with many replies in flight soon reads more per syscall.
const CLIENT_READ_BUFFER: usize = 1024;

/// The most one read offers to take (see [`FrameReader::adapt_read_size`]).
const MAX_READ: usize = 64 * 1024;

/// The rest of a frame from which on a read takes only that rest: the next frame then starts
/// a buffer of its own, and a large frame is never copied to make room for it.
const LARGE_REST: usize = 16 * 1024;

/// The largest frame whose size sizes the next buffer of a connection in a burst.
const MAX_FRAME_HINT: usize = 128 * 1024;

/// How many frames of the size last read a new buffer has room for (up to [`MAX_READ`]):
/// with room for one or two, the frame that straddles a buffer's end (copied to the next
/// buffer) and the next buffer's allocation came with nearly every frame.
const FRAMES_PER_BUFFER: usize = 8;

/// The most a read into the stack scratch (no buffer held) takes.
const MAX_PARKED_READ: usize = 8 * 1024;

/// Buffers kept per thread and pool. A thread that parks more than this frees the rest, so a
/// pool costs at most this many buffers per thread.
const POOL_PER_THREAD: usize = 64;

type Pool = RefCell<Vec<BytesMut>>;

thread_local! {
    static SERVER_POOL: Pool = const { RefCell::new(Vec::new()) };
    static CLIENT_POOL: Pool = const { RefCell::new(Vec::new()) };
}

/// How large a [`FrameReader`]'s buffers start, and which per-thread pool they go back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadPolicy {
    /// Requests: small frames, most connections idle.
    Server,
    /// Replies: larger frames, read in bursts when calls are pipelined.
    Client,
}

impl ReadPolicy {
    fn capacity(self) -> usize {
        match self {
            Self::Server => READ_BUFFER,
            Self::Client => CLIENT_READ_BUFFER,
        }
    }

    fn pool(self) -> &'static LocalKey<Pool> {
        match self {
            Self::Server => &SERVER_POOL,
            Self::Client => &CLIENT_POOL,
        }
    }

    /// A pooled buffer, or a new one if this thread's pool is empty.
    fn take_buffer(self) -> BytesMut {
        self.pool()
            .with_borrow_mut(Vec::pop)
            .unwrap_or_else(|| BytesMut::with_capacity(self.capacity()))
    }

    /// Returns `buffer` to this thread's pool, or gives it back to the caller to keep:
    /// - when a frame payload still shares its allocation: the reader's next read reuses it
    ///   in place once the payload is gone;
    /// - when the decoder grew it because the peer sends in bulk: the connection is busy, and
    ///   starting again from a small buffer would cost it more syscalls (the decoder still
    ///   frees a buffer grown past 64 KiB).
    fn give_back(self, mut buffer: BytesMut) -> Option<BytesMut> {
        if buffer.capacity() > 4 * self.capacity() || !buffer.try_reclaim(self.capacity()) {
            return Some(buffer);
        }
        self.pool().with_borrow_mut(|pool| {
            if pool.len() < POOL_PER_THREAD {
                pool.push(buffer);
            }
        });
        None
    }
}

/// A stream of frames from `R`, decoded by a [`FrameCodec`].
pub(crate) struct FrameReader<R> {
    io: R,
    codec: FrameCodec,
    policy: ReadPolicy,
    /// Empty with no capacity while parked.
    buffer: BytesMut,
    /// The size `buffer` was allocated with, when this reader allocated it for a burst (0: a
    /// pooled buffer, or one the decoder grew).
    buffer_size: usize,
    /// How much the next read offers to take: doubled after a read that took at least this
    /// much (the peer sends in bursts), halved back towards the policy's buffer size after
    /// one that took less than a quarter of it.
    read_size: usize,
    /// The length of the last frame decoded, prefix included: a burst of large frames reads
    /// each into a buffer of about its size.
    last_frame: usize,
    /// The buffers this reader left in a burst, to read into again once their frames are
    /// gone (let go when the connection calms down).
    spare: SpareBuffers,
    eof: bool,
    /// Reads that brought bytes, counted (wrapping): a frame arriving slowly (a large one on
    /// a slow link) shows the peer alive before it is whole.
    reads: u32,
    /// Buffers allocated for reads, for the tests to count.
    #[cfg(test)]
    allocated: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(io: R, codec: FrameCodec, policy: ReadPolicy) -> Self {
        Self {
            io,
            codec: codec.without_reserving(),
            policy,
            buffer: BytesMut::new(),
            buffer_size: 0,
            read_size: policy.capacity(),
            last_frame: 0,
            spare: SpareBuffers::default(),
            eof: false,
            reads: 0,
            #[cfg(test)]
            allocated: 0,
        }
    }

    /// The next frame; `None` once the peer closed the stream between frames. A stream that
    /// ends inside a frame is an [`FrameError::Io`] of kind `UnexpectedEof`.
    pub(crate) fn next(
        &mut self,
    ) -> impl Future<Output = Option<Result<Frame, FrameError>>> + Unpin + '_ {
        poll_fn(|cx| self.poll_next(cx))
    }

    pub(crate) fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame, FrameError>>> {
        loop {
            if !self.buffer.is_empty() {
                match self.codec.decode(&mut self.buffer) {
                    Ok(Some(frame)) => {
                        self.last_frame = FRAME_OVERHEAD + frame.payload.len();
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Ok(None) => {}
                    Err(err) => return Poll::Ready(Some(Err(err))),
                }
            }
            if self.eof {
                if self.buffer.is_empty() {
                    return Poll::Ready(None);
                }
                self.buffer.clear();
                return Poll::Ready(Some(Err(FrameError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a frame",
                )))));
            }
            // A connection in a burst reads into a buffer even when its last one is used up
            // (a large frame filled it exactly): reading without one would copy the next
            // frame in from 8 KiB of stack at a time.
            let bursting = self.read_size > self.policy.capacity();
            let read = if self.buffer.capacity() == 0 && !bursting {
                self.poll_read_parked(cx)
            } else {
                let limit = self.make_room();
                let mut room = (&mut self.buffer).limit(limit);
                tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut room)
            };
            match ready!(read) {
                Ok(0) => self.eof = true,
                Ok(read) => {
                    self.reads = self.reads.wrapping_add(1);
                    self.adapt_read_size(read);
                }
                Err(err) => return Poll::Ready(Some(Err(FrameError::Io(err)))),
            }
        }
    }

    /// Before a read: room for the rest of the frame the buffer has begun, and in a burst for
    /// most of the next read's offer. The room is made in place once the frames read before
    /// are gone, else in a buffer left earlier whose frames are gone, else in a new one. A
    /// quiet connection reads into what its buffer has left (reserving would cost it an
    /// allocation now and then).
    ///
    /// Returns how much the read may take: the rest of a large frame only, so that the next
    /// frame starts a buffer of its own rather than being copied out of this one's tail.
    fn make_room(&mut self) -> usize {
        let len = self.buffer.len();
        let missing = self.codec.missing(&self.buffer);
        let bursting = self.read_size > self.policy.capacity();
        let limit = if len > 0 && missing >= LARGE_REST {
            missing
        } else {
            usize::MAX
        };
        let wanted_room = if bursting {
            missing.max(self.read_size / 4)
        } else {
            missing.max(1)
        };
        if self.buffer.capacity() - len >= wanted_room {
            return limit;
        }
        // A burst of large frames reads each into a buffer of its size: the read then ends
        // where the frame does.
        let hint = if bursting && len == 0 && self.last_frame <= MAX_FRAME_HINT {
            self.last_frame
        } else {
            0
        };
        // Frames below LARGE_REST arrive in buffers shared by several: one allocation, and
        // one copy of a frame cut at the buffer's end, per several frames.
        let several_frames = if self.last_frame < LARGE_REST {
            (FRAMES_PER_BUFFER * self.last_frame).min(MAX_READ)
        } else {
            0
        };
        let wanted = (len + missing)
            .max(self.read_size)
            .max(hint)
            .max(several_frames);
        let limit = limit.min(wanted - len);
        if self.buffer.try_reclaim(wanted - len) {
            return limit;
        }
        let (mut next, size) = match self.spare.take_free(wanted) {
            Some(free) => free,
            None => {
                #[cfg(test)]
                {
                    self.allocated += 1;
                }
                (BytesMut::with_capacity(wanted), wanted)
            }
        };
        next.extend_from_slice(&self.buffer);
        let left = std::mem::replace(&mut self.buffer, next);
        let left_size = std::mem::replace(&mut self.buffer_size, size);
        if left_size > 0 {
            self.spare.keep(left, left_size);
        }
        limit
    }

    /// Doubles the next read's offer after a read of at least that much, up to
    /// [`MAX_READ`]; halves it after one of less than a quarter of it, and lets go of the
    /// spare buffers once it is back at the policy's buffer size.
    fn adapt_read_size(&mut self, read: usize) {
        if read >= self.read_size {
            self.read_size = (self.read_size * 2).min(MAX_READ);
        } else if read < self.read_size / 4 {
            self.read_size = (self.read_size / 2).max(self.policy.capacity());
            if self.read_size == self.policy.capacity() {
                self.spare.clear();
            }
        }
    }

    /// Reads without a buffer: into a scratch array on the stack, so that a read that finds
    /// nothing (the usual case for an idle connection) leaves the reader holding no buffer.
    /// Only bytes that arrived are copied into a buffer taken from the pool.
    fn poll_read_parked(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut scratch = [MaybeUninit::<u8>::uninit(); MAX_PARKED_READ];
        let size = self.read_size.min(MAX_PARKED_READ);
        let mut read = ReadBuf::uninit(&mut scratch[..size]);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut read))?;
        let filled = read.filled();
        if !filled.is_empty() {
            #[cfg(test)]
            {
                self.allocated += 1;
            }
            self.buffer = self.policy.take_buffer();
            self.buffer_size = 0;
            self.buffer.extend_from_slice(filled);
        }
        Poll::Ready(Ok(filled.len()))
    }

    /// How many reads brought bytes so far (wrapping).
    pub(crate) fn reads(&self) -> u32 {
        self.reads
    }

    /// Lets go of the read buffer if it holds no partial frame. Call it when the connection
    /// is about to wait for its peer.
    ///
    /// A buffer this reader allocated for a burst stays: the peer sends faster than the
    /// connection idles, and in a burst whose frames arrive one per read, handing the rest of
    /// the buffer to the pool after each frame cost a new buffer for the next one.
    pub(crate) fn park(&mut self) {
        if self.buffer.is_empty() && self.buffer.capacity() > 0 && self.buffer_size == 0 {
            match self.policy.give_back(std::mem::take(&mut self.buffer)) {
                Some(kept) => self.buffer = kept,
                None => self.buffer_size = 0,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::transport::frame::FrameKind;

    fn ping(id: u64) -> Bytes {
        Frame::control(FrameKind::Ping, id).to_bytes()
    }

    #[tokio::test]
    async fn frames_split_across_reads_and_many_per_read_all_arrive() {
        let (mut tx, rx) = tokio::io::duplex(7);
        let mut reader = FrameReader::new(rx, FrameCodec::default(), ReadPolicy::Server);
        let writer = tokio::spawn(async move {
            let mut all = Vec::new();
            for id in 1..=50 {
                all.extend_from_slice(&ping(id));
            }
            tx.write_all(&all).await.unwrap();
        });
        for id in 1..=50 {
            let frame = reader.next().await.unwrap().unwrap();
            assert_eq!((frame.kind, frame.request_id), (FrameKind::Ping, id));
            reader.park();
        }
        writer.await.unwrap();
        assert!(reader.next().await.is_none(), "clean end between frames");
    }

    #[tokio::test]
    async fn a_parked_reader_holds_no_buffer_and_reuses_a_pooled_one() {
        let (mut tx, rx) = tokio::io::duplex(1024);
        let mut reader = FrameReader::new(rx, FrameCodec::default(), ReadPolicy::Server);
        tx.write_all(&ping(1)).await.unwrap();
        reader.next().await.unwrap().unwrap();
        reader.park();
        assert_eq!(reader.buffer.capacity(), 0, "idle: no buffer");
        let poll = futures::poll!(reader.next());
        assert!(poll.is_pending());
        assert_eq!(
            reader.buffer.capacity(),
            0,
            "waiting for bytes takes no buffer"
        );
        tx.write_all(&ping(2)).await.unwrap();
        let frame = reader.next().await.unwrap().unwrap();
        assert_eq!(frame.request_id, 2);
        // What is left of the buffer after the frame was split off it.
        assert!(reader.buffer.capacity() >= READ_BUFFER - ping(2).len());
    }

    #[tokio::test]
    async fn a_partial_frame_is_kept_when_parking_and_an_end_inside_it_is_an_error() {
        let (mut tx, rx) = tokio::io::duplex(1024);
        let mut reader = FrameReader::new(rx, FrameCodec::default(), ReadPolicy::Server);
        let frame = ping(3);
        tx.write_all(&frame[..5]).await.unwrap();
        let poll = futures::poll!(Box::pin(reader.next()));
        assert!(poll.is_pending());
        reader.park();
        assert_eq!(reader.buffer.len(), 5, "the partial frame survives parking");
        tx.write_all(&frame[5..]).await.unwrap();
        assert_eq!(reader.next().await.unwrap().unwrap().request_id, 3);
        tx.write_all(&frame[..9]).await.unwrap();
        drop(tx);
        match reader.next().await {
            Some(Err(FrameError::Io(err))) => assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof),
            other => panic!("expected an unexpected-eof error, got {other:?}"),
        }
    }

    #[test]
    fn a_server_keeps_a_buffer_still_shared_with_a_payload() {
        let server = ReadPolicy::Server;
        SERVER_POOL.with_borrow_mut(Vec::clear);
        let mut buffer = BytesMut::with_capacity(READ_BUFFER);
        buffer.extend_from_slice(&[1; 16]);
        let payload = buffer.split_to(16).freeze();
        let kept = server
            .give_back(buffer)
            .expect("a shared buffer comes back");
        assert_eq!(SERVER_POOL.with_borrow(Vec::len), 0);
        drop(payload);
        assert!(server.give_back(kept).is_none());
        assert_eq!(
            SERVER_POOL.with_borrow(Vec::len),
            1,
            "pooled once the payload is gone"
        );
        let big = BytesMut::with_capacity(64 * 1024);
        assert!(
            server.give_back(big).is_some(),
            "a grown buffer stays with its connection"
        );
        assert_eq!(SERVER_POOL.with_borrow(Vec::len), 1);
    }

    #[tokio::test]
    async fn a_client_buffer_starts_small_and_grows_when_reads_fill_it() {
        let (mut tx, rx) = tokio::io::duplex(64 * 1024);
        let mut reader = FrameReader::new(rx, FrameCodec::default(), ReadPolicy::Client);
        let mut burst = Vec::new();
        for id in 1..=400 {
            burst.extend_from_slice(&ping(id));
        }
        tx.write_all(&burst).await.unwrap();
        assert_eq!(reader.next().await.unwrap().unwrap().request_id, 1);
        assert_eq!(
            reader.read_size,
            2 * CLIENT_READ_BUFFER,
            "a read that took all it was offered doubles the next offer"
        );
        for id in 2..=400 {
            assert_eq!(reader.next().await.unwrap().unwrap().request_id, id);
        }
        assert!(
            reader.buffer_size > CLIENT_READ_BUFFER,
            "a burst larger than the buffer reads into a larger one"
        );
        reader.park();
        // Lone frames again: the offer falls back to the policy's buffer size.
        for id in 401..=410 {
            tx.write_all(&ping(id)).await.unwrap();
            assert_eq!(reader.next().await.unwrap().unwrap().request_id, id);
            reader.park();
        }
        assert_eq!(reader.read_size, CLIENT_READ_BUFFER);
    }

    #[tokio::test]
    async fn a_busy_reader_reads_into_the_buffers_it_left_once_their_frames_are_gone() {
        const BURST: u64 = 10_000;
        let (mut tx, rx) = tokio::io::duplex(64 * 1024);
        let mut reader = FrameReader::new(rx, FrameCodec::default(), ReadPolicy::Client);
        let burst: Vec<u8> = (1..=BURST).flat_map(|id| ping(id).to_vec()).collect();
        let writer = tokio::spawn(async move {
            tx.write_all(&burst).await.unwrap();
            tx.write_all(&burst).await.unwrap();
            tx
        });
        // Frames held (a consumer that has not taken them yet): the reader moves on to new
        // buffers and keeps the ones it left.
        let mut held = Vec::new();
        for _ in 0..BURST {
            held.push(reader.next().await.unwrap().unwrap());
        }
        let kept = reader.spare.len();
        assert!(
            kept > 0,
            "a burst with its frames held leaves buffers behind"
        );
        drop(held);
        // Their frames gone, the buffers are read into again, while the second burst's
        // frames are held in turn.
        let mut held = Vec::new();
        for _ in 0..BURST {
            held.push(reader.next().await.unwrap().unwrap());
        }
        assert!(
            reader.spare.reused() > 0,
            "kept {kept} buffers after the first burst, none read into again"
        );
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn frames_arriving_one_per_read_share_buffers_while_held() {
        const FRAMES: u64 = 1_000;
        let (mut tx, rx) = tokio::io::duplex(64 * 1024);
        let mut reader =
            FrameReader::new(rx, FrameCodec::for_version(1 << 20, 5), ReadPolicy::Client);
        let item = |id| {
            Frame {
                payload: Bytes::from(vec![7; 1024]),
                ..Frame::control(FrameKind::Item, id)
            }
            .to_bytes()
        };
        // A sender slower than the reader: every read finds one frame. The consumer holds the
        // last few items, so the buffer they were read into is never free for long.
        let mut held = std::collections::VecDeque::new();
        for id in 1..=FRAMES {
            tx.write_all(&item(id)).await.unwrap();
            let frame = reader.next().await.unwrap().unwrap();
            assert_eq!(frame.request_id, id);
            held.push_back(frame);
            if held.len() > 4 {
                held.pop_front();
            }
            reader.park();
        }
        // Before: a buffer and a copy of most of a frame for nearly every frame (1,500
        // buffers for 1,000 frames); now the buffers they leave are read into again.
        assert!(
            reader.allocated <= FRAMES as usize / 50,
            "{} buffers allocated for {FRAMES} frames of 1 KiB read one at a time",
            reader.allocated
        );
    }
}
