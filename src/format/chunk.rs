//! Content: cutting it into chunks (FastCDC v2020), naming each chunk by a keyed BLAKE3
//! hash, and the stored form of a chunk (zstd, or raw where zstd does not pay).
//!
//! Stored chunk: `[FORMAT_VERSION, codec, payload...]`, codec 0 = raw, 1 = zstd, 2 = a zstd
//! delta: a frame compressed with another chunk's content (its base) as zstd's reference
//! prefix, which only that content decodes. Which chunk is the base is recorded where the
//! chunk is indexed (`storage/pack/`), as is where stored chunks are kept.
//!
//! A solid block, `[FORMAT_VERSION, 3, zstd frame]`, is the content of several small
//! chunks laid end to end and compressed as one frame of at most [`BLOCK_MAX`] bytes:
//! a few KiB compress poorly alone, as zstd has little to learn from, while a block of
//! neighbouring files shares its vocabulary. Where each chunk lies in the block is
//! recorded in its index entry.
//!
//! A large solid block, `[FORMAT_VERSION, 4, zstd frame]`, is the same with at most
//! [`LARGE_BLOCK_MAX`] bytes of content: gc's recompression ([`RECOMPRESS_LEVEL`]) lays
//! every full chunk of the store into such blocks, where a larger frame at a higher level
//! finds more to share than a save, which must be fast, can afford. A block of at most
//! [`BLOCK_MAX`] bytes keeps codec 3, which builds before codec 4 read.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

use crate::format::codec::FORMAT_VERSION;
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// Chunking parameters, fixed when a store is created and kept in its meta table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkParams {
    /// Smallest chunk FastCDC cuts (except a file's last).
    pub min: usize,
    /// The target size the cut-point mask aims for.
    pub avg: usize,
    /// Largest chunk: 258048 keeps a raw chunk plus header under 256 KiB.
    pub max: usize,
}

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            min: 16 * 1024,
            avg: 64 * 1024,
            max: 258_048,
        }
    }
}

impl ChunkParams {
    /// Checks parameters read from a store, which may be crafted: FastCDC's own bounds
    /// (it asserts them, and `max` also sizes the decompression buffer of every chunk
    /// read), and `min <= avg <= max`.
    pub fn check(self) -> Result<ChunkParams> {
        use fastcdc::v2020::{
            AVERAGE_MAX, AVERAGE_MIN, MAXIMUM_MAX, MAXIMUM_MIN, MINIMUM_MAX, MINIMUM_MIN,
        };
        let ChunkParams { min, avg, max } = self;
        if (MINIMUM_MIN..=MINIMUM_MAX).contains(&min)
            && (AVERAGE_MIN..=AVERAGE_MAX).contains(&avg)
            && (MAXIMUM_MIN..=MAXIMUM_MAX).contains(&max)
            && min <= avg
            && avg <= max
        {
            Ok(self)
        } else {
            Err(Error::Corrupt(format!(
                "the chunking parameters (min {min}, avg {avg}, max {max}) are out of range"
            )))
        }
    }
}

const CODEC_RAW: u8 = 0;
const CODEC_ZSTD: u8 = 1;
const CODEC_DELTA: u8 = 2;
const CODEC_BLOCK: u8 = 3;
const CODEC_LARGE_BLOCK: u8 = 4;
/// Chunks shorter than this are stored in solid blocks (whole small files, and the
/// tails of larger ones: every other chunk is at least the chunking minimum, 16 KiB).
pub const SOLID_CHUNK_MAX: usize = 16 << 10;
/// The most content one solid block holds: reading one chunk decompresses the whole
/// block, which at 256 KiB is about as much work as reading one large chunk.
pub const BLOCK_MAX: usize = 256 << 10;
/// The most content one large solid block (codec 4) holds: what a read of one chunk in
/// it decompresses, and allocates, at most.
pub const LARGE_BLOCK_MAX: usize = 1 << 20;
/// The zstd level of gc's recompression into large solid blocks.
pub const RECOMPRESS_LEVEL: i32 = 9;
/// The least zstd level of solid blocks, whatever the save's level: a block's frame is
/// large enough that a higher level finds more, and the readers compress blocks on
/// every core. A save asked for a higher level uses it for blocks too
/// ([`block_level`]).
pub const BLOCK_LEVEL: i32 = 3;

/// The zstd level of the solid blocks of a save whose level is `level`: at least
/// [`BLOCK_LEVEL`].
pub fn block_level(level: i32) -> i32 {
    level.max(BLOCK_LEVEL)
}
/// The longest chain of delta bases one chunk may need: a read decodes at most this
/// many other chunks first (docs/design.md invariant 18).
pub const MAX_DELTA_DEPTH: u8 = 4;
/// zstd's window for deltas: the base and the chunk, each at most 258,048 bytes, fit.
const DELTA_WINDOW_LOG: u32 = 20;
/// zstd must save at least 3% for a chunk to be stored compressed.
const MIN_SAVING_PERCENT: usize = 3;

/// Names chunks (and trees and checkpoints) with the store's secret key, and cuts content.
#[derive(Clone)]
pub struct Hasher {
    key: [u8; 32],
    params: ChunkParams,
}

impl Hasher {
    /// A hasher for a store with this key and these chunking parameters.
    pub fn new(key: [u8; 32], params: ChunkParams) -> Self {
        Hasher { key, params }
    }

    /// The chunking parameters.
    pub fn params(&self) -> ChunkParams {
        self.params
    }

    /// The id of a chunk of content `bytes`.
    pub fn chunk_id(&self, bytes: &[u8]) -> ChunkId {
        ChunkId(self.hash(bytes))
    }

    /// The id of a tree whose encoded record is `bytes`.
    pub fn tree_id(&self, bytes: &[u8]) -> TreeId {
        TreeId(self.hash(bytes))
    }

    /// The id of a checkpoint whose encoded record is `bytes`.
    pub fn checkpoint_id(&self, bytes: &[u8]) -> CheckpointId {
        CheckpointId(self.hash(bytes))
    }

    /// Keyed BLAKE3 of `bytes`, truncated to 128 bits (docs/design.md, "Ids").
    fn hash(&self, bytes: &[u8]) -> u128 {
        let hash = blake3::keyed_hash(&self.key, bytes);
        let mut first = [0u8; 16];
        first.copy_from_slice(&hash.as_bytes()[..16]);
        u128::from_be_bytes(first)
    }

    /// Calls `each` with every chunk of `data`, in order.
    pub fn for_each_chunk(&self, data: &[u8], mut each: impl FnMut(&[u8])) {
        if data.len() <= self.params.min {
            if !data.is_empty() {
                each(data);
            }
            return;
        }
        let cdc =
            fastcdc::v2020::FastCDC::new(data, self.params.min, self.params.avg, self.params.max);
        for cut in cdc {
            each(&data[cut.offset..cut.offset + cut.length]);
        }
    }
}

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// The stored form of a chunk: zstd at `level` when that saves 3% or more, raw otherwise.
pub fn encode_chunk(data: &[u8], level: i32) -> Vec<u8> {
    match compress_if_it_pays(data, level) {
        Some(c) => stored(CODEC_ZSTD, &c),
        None => stored(CODEC_RAW, data),
    }
}

/// The stored form of a solid block of `content` (chunks' content end to end, at most
/// [`LARGE_BLOCK_MAX`] bytes) at `level`, if zstd saves 3% or more; `None` otherwise,
/// when its chunks are better stored one by one. Codec 3 up to [`BLOCK_MAX`] bytes of
/// content, codec 4 above.
pub fn encode_block(content: &[u8], level: i32) -> Option<Vec<u8>> {
    let codec = match content.len() <= BLOCK_MAX {
        true => CODEC_BLOCK,
        false => CODEC_LARGE_BLOCK,
    };
    compress_if_it_pays(content, level).map(|c| stored(codec, &c))
}

/// `[FORMAT_VERSION, codec, payload...]`.
fn stored(codec: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 2);
    out.extend_from_slice(&[FORMAT_VERSION, codec]);
    out.extend_from_slice(payload);
    out
}

/// `data` compressed as one zstd frame at `level`, if that saves 3% or more.
fn compress_if_it_pays(data: &[u8], level: i32) -> Option<Vec<u8>> {
    let compressed = COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(l, _)| *l != level) {
            *slot = zstd::bulk::Compressor::new(level).ok().map(|c| (level, c));
        }
        let (_, compressor) = slot.as_mut()?;
        compressor.compress(data).ok()
    });
    compressed.filter(|c| c.len() * 100 <= data.len() * (100 - MIN_SAVING_PERCENT))
}

/// The content of a stored chunk that is not a delta, unverified: for a writer that
/// moves a small chunk into a solid block (the chunk's id was just computed from this
/// content, or is checked when the block is read).
pub fn content_of(stored: &[u8], max: usize) -> Result<std::borrow::Cow<'_, [u8]>> {
    match stored {
        [FORMAT_VERSION, CODEC_RAW, payload @ ..] => Ok(std::borrow::Cow::Borrowed(payload)),
        [FORMAT_VERSION, CODEC_ZSTD, payload @ ..] => decompress(payload, max)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| Error::Corrupt(format!("a chunk does not decompress: {e}"))),
        _ => Err(Error::Corrupt(
            "a chunk's stored form is not one that holds its content alone".into(),
        )),
    }
}

/// The content of a stored solid block: at most [`BLOCK_MAX`] bytes for codec 3 and
/// [`LARGE_BLOCK_MAX`] for codec 4, so that a crafted block cannot make a reader
/// allocate more (whatever its frame claims).
pub fn decode_block(stored: &[u8]) -> std::result::Result<Vec<u8>, String> {
    match stored {
        [FORMAT_VERSION, CODEC_BLOCK, payload @ ..] => decompress(payload, BLOCK_MAX),
        [FORMAT_VERSION, CODEC_LARGE_BLOCK, payload @ ..] => decompress(payload, LARGE_BLOCK_MAX),
        [FORMAT_VERSION, codec, ..] => Err(format!("it has codec {codec}, not a solid block's")),
        [version, ..] => Err(format!(
            "it has format {version}, which this build does not read"
        )),
        [] => Err("it is empty".into()),
    }
}

/// The stored form of `data` as a delta against `base` (another chunk's content), if zstd
/// manages it; the caller compares it with [`encode_chunk`]'s and keeps the smaller.
pub fn encode_delta(data: &[u8], base: &[u8], level: i32) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{CCtx, CParameter};
    // A context per delta: a reference prefix must outlive the context that holds it.
    let mut cctx = CCtx::try_create()?;
    cctx.set_parameter(CParameter::CompressionLevel(level))
        .ok()?;
    cctx.set_parameter(CParameter::WindowLog(DELTA_WINDOW_LOG))
        .ok()?;
    cctx.set_parameter(CParameter::ContentSizeFlag(true)).ok()?;
    cctx.ref_prefix(base).ok()?;
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()) + 2);
    out.extend_from_slice(&[FORMAT_VERSION, CODEC_DELTA]);
    let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()));
    cctx.compress2(&mut frame, data).ok()?;
    out.extend_from_slice(&frame);
    Some(out)
}

/// Decompresses the zstd frame `payload` into at most `capacity` bytes, with this
/// thread's decompressor (made once: a context per frame would cost more than small
/// frames do).
pub fn decompress(payload: &[u8], capacity: usize) -> std::result::Result<Vec<u8>, String> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = zstd::bulk::Decompressor::new().ok();
        }
        match slot.as_mut() {
            Some(d) => d.decompress(payload, capacity).map_err(|e| e.to_string()),
            None => Err("cannot create a zstd decompressor".to_string()),
        }
    })
}

/// The length of a stored chunk's content, from its header alone (zstd frames record
/// it), without decompressing; `None` when the header does not say.
pub fn raw_len(stored: &[u8]) -> Option<u64> {
    match stored {
        [FORMAT_VERSION, CODEC_RAW, payload @ ..] => Some(payload.len() as u64),
        [FORMAT_VERSION, CODEC_ZSTD | CODEC_DELTA, payload @ ..] => {
            zstd::zstd_safe::get_frame_content_size(payload)
                .ok()
                .flatten()
        }
        _ => None,
    }
}

/// Decodes a stored chunk into `out` (appending) and checks it against its id, so a
/// damaged store can never hand back wrong bytes.
pub fn decode_chunk(hasher: &Hasher, id: ChunkId, stored: &[u8], out: &mut Vec<u8>) -> Result<()> {
    decode_chunk_on(hasher, id, stored, None, out)
}

/// [`decode_chunk`] for a chunk that may be a delta: `base` is its base's content, which
/// a delta needs and any other chunk ignores.
pub fn decode_chunk_on(
    hasher: &Hasher,
    id: ChunkId,
    stored: &[u8],
    base: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let start = out.len();
    match stored {
        [FORMAT_VERSION, CODEC_DELTA, payload @ ..] => {
            let base = base.ok_or_else(|| {
                Error::Corrupt(format!("chunk {id} is a delta, read without its base"))
            })?;
            decode_delta(hasher, payload, base, out)
                .map_err(|e| Error::Corrupt(format!("chunk {id} does not decompress: {e}")))?;
        }
        [FORMAT_VERSION, CODEC_RAW, payload @ ..] => out.extend_from_slice(payload),
        [FORMAT_VERSION, CODEC_ZSTD, payload @ ..] => {
            let data = decompress(payload, hasher.params.max);
            let data =
                data.map_err(|e| Error::Corrupt(format!("chunk {id} does not decompress: {e}")))?;
            out.extend_from_slice(&data);
        }
        [version, codec, ..] => {
            return Err(Error::Corrupt(format!(
                "chunk {id} has format {version} and codec {codec}, which this build does not read"
            )))
        }
        _ => return Err(Error::Corrupt(format!("chunk {id} is truncated"))),
    }
    if hasher.chunk_id(&out[start..]) != id {
        return Err(Error::Corrupt(format!(
            "chunk {id} does not match its hash"
        )));
    }
    Ok(())
}

/// Decompresses a delta frame against `base` into `out` (appending), at most a chunk's
/// largest size: a crafted frame cannot make it allocate more.
fn decode_delta(
    hasher: &Hasher,
    payload: &[u8],
    base: &[u8],
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    use zstd::zstd_safe::{DCtx, DParameter};
    let mut dctx = DCtx::try_create().ok_or("cannot create a zstd decompressor")?;
    let error = |code| zstd::zstd_safe::get_error_name(code).to_string();
    dctx.set_parameter(DParameter::WindowLogMax(DELTA_WINDOW_LOG))
        .map_err(error)?;
    dctx.ref_prefix(base).map_err(error)?;
    let mut data = Vec::with_capacity(hasher.params.max);
    dctx.decompress(&mut data, payload).map_err(error)?;
    out.extend_from_slice(&data);
    Ok(())
}

/// Deterministic incompressible test data (xorshift64 from `seed`), for the unit tests of
/// every module that chunks content.
#[cfg(test)]
pub(crate) fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_chunks_round_trip_and_detect_damage() {
        let hasher = Hasher::new([7; 32], ChunkParams::default());
        for data in [
            b"hello hello hello hello".repeat(100),
            (0..=255u8).collect(),
        ] {
            let id = hasher.chunk_id(&data);
            let stored = encode_chunk(&data, 3);
            let mut out = Vec::new();
            decode_chunk(&hasher, id, &stored, &mut out).unwrap();
            assert_eq!(out, data);
            assert_eq!(raw_len(&stored), Some(data.len() as u64));
            let mut damaged = stored.clone();
            let last = damaged.len() - 1;
            damaged[last] ^= 1;
            assert!(decode_chunk(&hasher, id, &damaged, &mut Vec::new()).is_err());
        }
    }

    #[test]
    fn an_edit_changes_only_nearby_chunks() {
        let hasher = Hasher::new([1; 32], ChunkParams::default());
        let data = pseudo_random(4 << 20, 0x9e3779b97f4a7c15);
        let ids = |d: &[u8]| {
            let mut v = Vec::new();
            hasher.for_each_chunk(d, |c| v.push(hasher.chunk_id(c)));
            v
        };
        let before = ids(&data);
        let mut edited = data.clone();
        edited[2 << 20] ^= 0xff;
        let after = ids(&edited);
        let shared = after.iter().filter(|id| before.contains(id)).count();
        assert!(before.len() > 20);
        assert!(
            shared + 2 >= before.len(),
            "{shared} of {} shared",
            before.len()
        );
    }

    /// A block larger than 256 KiB is codec 4 and reads back; one up to 256 KiB stays
    /// codec 3, which builds before codec 4 read.
    #[test]
    fn large_blocks_take_codec_4_and_small_ones_keep_codec_3() {
        let text = |len: usize| b"fn block() { text(); }\n".repeat(len / 23 + 1)[..len].to_vec();
        for (len, codec) in [(BLOCK_MAX, CODEC_BLOCK), (BLOCK_MAX + 1, CODEC_LARGE_BLOCK)] {
            let stored = encode_block(&text(len), 3).unwrap();
            assert_eq!(stored[..2], [FORMAT_VERSION, codec]);
            assert_eq!(decode_block(&stored).unwrap(), text(len));
        }
        let largest = encode_block(&text(LARGE_BLOCK_MAX), 3).unwrap();
        assert_eq!(decode_block(&largest).unwrap().len(), LARGE_BLOCK_MAX);
    }

    /// A crafted block whose frame holds more than its codec allows is refused with an
    /// error, whatever its header claims, before anything of that size is allocated.
    #[test]
    fn a_block_holding_more_than_its_codec_allows_is_refused() {
        let frame = |len: usize| zstd::bulk::compress(&vec![7u8; len], 1).unwrap();
        let block = |codec: u8, payload: &[u8]| [&[FORMAT_VERSION, codec][..], payload].concat();
        // Codec 3's bound did not grow with codec 4's.
        let over_small = block(CODEC_BLOCK, &frame(BLOCK_MAX + 1));
        assert!(decode_block(&over_small).is_err());
        let over_large = block(CODEC_LARGE_BLOCK, &frame(LARGE_BLOCK_MAX + 1));
        assert!(decode_block(&over_large).is_err());
        // A frame header claiming 1 TiB of content: a single-segment frame's header
        // (magic, descriptor with an 8-byte content size) and nothing after it.
        let mut claims = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
        claims.extend_from_slice(&(1u64 << 40).to_le_bytes());
        for codec in [CODEC_BLOCK, CODEC_LARGE_BLOCK] {
            let error = decode_block(&block(codec, &claims)).unwrap_err();
            assert!(!error.is_empty());
        }
        // Not a block at all.
        assert!(decode_block(&block(5, &frame(10))).is_err());
        assert!(decode_block(&[]).is_err());
    }
}
