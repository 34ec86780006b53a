//! Every record type the store keeps, pushed through the record encoding
//! ([`crate::format::codec`]): round trips, and bodies mutated past their checksum that
//! must decode to a valid value or fail, never panic.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::format::chunk::ChunkParams;
use crate::format::codec::{checksum, decode, encode, FORMAT_VERSION};
use crate::model::stat_cache::{CacheEntry, FileStat};
use crate::model::tree::{Entry, Node, Tree};
use crate::model::{Attachment, Checkpoint, Head, SkipReason, SkippedFile};
use crate::{CheckpointId, Error};
use proptest::collection::vec;
use proptest::prelude::*;

/// Cases per record type for the fuzzing of mutated records, and of sealed arbitrary
/// bodies: tens of microseconds each, about a second for the module in a debug build.
const FUZZ_CASES: u32 = 4000;

/// A record around `body`, as [`encode`] makes one: version byte, checksum, body.
fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    out.extend_from_slice(&checksum(body));
    out.extend_from_slice(body);
    out
}

/// Decodes `bytes` as `T`: it must return (not panic), and a value it returns must
/// encode to a record that decodes to that value again.
fn decodes_or_errs<T: Serialize + DeserializeOwned + PartialEq + Debug>(bytes: &[u8]) {
    if let Ok(value) = decode::<T>(bytes, "fuzzed record") {
        let again = decode::<T>(&encode(&value), "re-encoded record");
        assert_eq!(again.ok().as_ref(), Some(&value));
    }
}

/// Decodes `bytes` as every record type the store holds (see each `codec::decode`
/// call): a body of one type is often read as another after damage or by mistake.
fn decode_as_every_record(bytes: &[u8]) {
    decodes_or_errs::<Tree>(bytes);
    decodes_or_errs::<Checkpoint>(bytes);
    decodes_or_errs::<CacheEntry>(bytes);
    decodes_or_errs::<Head>(bytes);
    decodes_or_errs::<ChunkParams>(bytes);
    // The restore marker: the target checkpoint's id.
    decodes_or_errs::<u128>(bytes);
}

/// One change to a record body; offsets are taken modulo the body's length.
#[derive(Clone, Debug)]
enum Mutation {
    FlipBit(usize, u8),
    Overwrite(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
    /// A varint-sized run of 0xff (a huge length or count) inserted at an offset.
    Huge(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), 0..8u8).prop_map(|(at, bit)| Mutation::FlipBit(at, bit)),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Overwrite(at, b)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        2 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => any::<usize>().prop_map(Mutation::Huge),
    ]
}

fn mutate(body: &mut Vec<u8>, mutation: &Mutation) {
    let len = body.len();
    match *mutation {
        Mutation::FlipBit(at, bit) if len > 0 => body[at % len] ^= 1 << bit,
        Mutation::Overwrite(at, b) if len > 0 => body[at % len] = b,
        Mutation::Insert(at, b) => body.insert(at % (len + 1), b),
        Mutation::Delete(at) if len > 0 => {
            body.remove(at % len);
        }
        Mutation::Truncate(at) => body.truncate(at % (len + 1)),
        Mutation::Huge(at) => {
            let at = at % (len + 1);
            body.splice(at..at, [0xff; 9]);
        }
        _ => {}
    }
}

/// Encodes `value`, checks it round-trips, then mutates its body, seals it again so
/// that the checksum passes and the body itself reaches the decoders, and decodes it
/// as every record type. Left unsealed, the changed body must fail its checksum.
fn fuzz_record<T: Serialize + DeserializeOwned + PartialEq + Debug>(
    value: &T,
    mutations: &[Mutation],
) {
    let record = encode(value);
    assert_eq!(&decode::<T>(&record, "record").unwrap(), value);
    let mut body = record[5..].to_vec();
    for mutation in mutations {
        mutate(&mut body, mutation);
    }
    decode_as_every_record(&seal(&body));
    if body != record[5..] {
        let mut stale = record[..5].to_vec();
        stale.extend_from_slice(&body);
        assert!(decode::<T>(&stale, "record").is_err());
    }
}

fn id<T: From<u128> + std::fmt::Debug>() -> impl Strategy<Value = T> {
    any::<u128>().prop_map(T::from)
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 1..12)
}

/// A tree with one to three entries of each kind.
fn tree() -> impl Strategy<Value = Tree> {
    let file = (any::<u64>(), 0u32..0o1000, vec(id(), 0..5))
        .prop_map(|(size, mode, chunks)| Node::file(size, mode, chunks, true));
    let symlink = vec(any::<u8>(), 0..20).prop_map(|target| Node::Symlink { target });
    let dir = id().prop_map(|tree| Node::Dir { tree });
    (
        vec((name(), file), 1..4),
        vec((name(), symlink), 1..4),
        vec((name(), dir), 1..4),
    )
        .prop_map(|(files, links, dirs)| {
            let mut entries: Vec<Entry> = files
                .into_iter()
                .chain(links)
                .chain(dirs)
                .map(|(name, node)| Entry { name, node })
                .collect();
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            Tree { entries }
        })
}

fn attachment() -> impl Strategy<Value = Attachment> {
    (".{0,12}", any::<u64>(), vec(id(), 0..4)).prop_map(|(name, size, chunks)| Attachment {
        name,
        size,
        chunks,
    })
}

fn skipped_file() -> impl Strategy<Value = SkippedFile> {
    let reason = prop_oneof![Just(SkipReason::TooLarge), Just(SkipReason::Unreadable)];
    (name(), any::<u64>(), reason).prop_map(|(path, size, reason)| SkippedFile {
        path,
        size,
        reason,
    })
}

/// A checkpoint with parents, metadata and attachments, and skipped files or none
/// (as most have).
fn checkpoint() -> impl Strategy<Value = Checkpoint> {
    (
        (id(), vec(id(), 1..3), any::<i128>(), ".{0,40}"),
        (
            proptest::option::of(".{0,12}"),
            proptest::option::of("[0-9a-f]{40}"),
            proptest::option::of(".{0,12}"),
        ),
        vec((".{0,8}", ".{0,16}"), 1..4),
        vec(attachment(), 1..3),
        (any::<u64>(), any::<u64>()),
        vec(skipped_file(), 0..3),
    )
        .prop_map(
            |(
                (tree, parents, time_ns, message),
                (branch, git_head, git_branch),
                meta,
                attachments,
                (files, bytes),
                skipped,
            )| Checkpoint {
                tree,
                parents,
                time_ns,
                message,
                branch,
                git_head,
                git_branch,
                meta,
                attachments,
                files,
                bytes,
                skipped,
            },
        )
}

fn cache_entry() -> impl Strategy<Value = CacheEntry> {
    (
        (any::<u64>(), any::<i64>(), any::<i64>()),
        (any::<u64>(), any::<u64>(), any::<u32>()),
        vec(id(), 0..5),
    )
        .prop_map(
            |((size, mtime_ns, ctime_ns), (ino, dev, mode), chunks)| CacheEntry {
                stat: FileStat {
                    size,
                    mtime_ns,
                    ctime_ns,
                    ino,
                    dev,
                    mode,
                },
                chunks,
            },
        )
}

fn head() -> impl Strategy<Value = Head> {
    prop_oneof![
        ".{0,24}".prop_map(Head::Branch),
        id().prop_map(Head::Detached)
    ]
}

fn chunk_params() -> impl Strategy<Value = ChunkParams> {
    (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(min, avg, max)| ChunkParams {
        min,
        avg,
        max,
    })
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    vec(mutation(), 0..5)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: FUZZ_CASES,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_trees_decode_or_err(value in tree(), m in mutations()) {
        fuzz_record(&value, &m);
    }

    #[test]
    fn mutated_checkpoints_decode_or_err(value in checkpoint(), m in mutations()) {
        fuzz_record(&value, &m);
    }

    #[test]
    fn mutated_cache_entries_decode_or_err(value in cache_entry(), m in mutations()) {
        fuzz_record(&value, &m);
    }

    #[test]
    fn mutated_heads_decode_or_err(value in head(), m in mutations()) {
        fuzz_record(&value, &m);
    }

    #[test]
    fn mutated_chunk_params_decode_or_err(value in chunk_params(), m in mutations()) {
        fuzz_record(&value, &m);
    }

    #[test]
    fn mutated_restore_markers_decode_or_err(value in any::<u128>(), m in mutations()) {
        fuzz_record(&value, &m);
    }

    /// Arbitrary bodies behind a valid header and checksum reach every decoder.
    #[test]
    fn sealed_arbitrary_bodies_decode_or_err(body in vec(any::<u8>(), 0..512)) {
        decode_as_every_record(&seal(&body));
    }
}

proptest! {
    /// Arbitrary bytes never panic a decoder: they are an error or a value.
    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_as_every_record(&bytes);
    }

    /// Any single flipped bit in an encoded record is detected.
    #[test]
    fn flipped_bits_are_detected(bit in 0usize..(8 * 40)) {
        let head = Head::Branch("a-branch-name-of-some-length".into());
        let mut bytes = encode(&head);
        let bit = bit % (8 * bytes.len());
        bytes[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(decode::<Head>(&bytes, "head").is_err());
    }
}

/// Every record cut short inside its header is "truncated": an error, never a panic.
#[test]
fn records_cut_inside_the_header_are_truncated() {
    for len in 0..5 {
        let cut = &encode(&Head::Detached(CheckpointId(42)))[..len];
        match decode::<Head>(cut, "head") {
            Err(Error::Corrupt(message)) => {
                assert!(message.contains("truncated"), "{len}: {message}")
            }
            other => panic!("{len} bytes: {other:?}"),
        }
    }
}

/// A record of another format version says which, whatever follows the version byte.
#[test]
fn records_of_another_format_name_it() {
    let mut record = encode(&Head::Detached(CheckpointId(42)));
    record[0] = FORMAT_VERSION + 1;
    for len in 1..record.len() {
        match decode::<Head>(&record[..len], "head") {
            Err(Error::Corrupt(message)) => assert!(
                message.contains(&format!("record format {}", FORMAT_VERSION + 1)),
                "{len}: {message}"
            ),
            other => panic!("{len} bytes: {other:?}"),
        }
    }
}

#[test]
fn records_round_trip() {
    let head = Head::Detached(CheckpointId(42));
    assert_eq!(decode::<Head>(&encode(&head), "head").unwrap(), head);
}
