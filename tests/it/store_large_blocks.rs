//! gc recompresses what saves stored into large solid blocks (codec 4, issue 37), and a
//! store written by the format before them stays readable: a fixture store made by the
//! build of cb07bfc (`tests/fixtures/store-cb07bfc.redb`: raw, zstd, delta chunks and
//! 256 KiB blocks) restores byte for byte, before and after a save and a gc of this
//! build mixed new blocks in and recompressed the old ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common;
use common::raw_store::{self, PACKS};
use common::{Node, Repo};
use redb::{ReadableDatabase, ReadableTable};

/// The fixture's store, written by the release build of cb07bfc.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-cb07bfc.redb")
}

/// Deterministic incompressible bytes (xorshift64). Not `common::pseudo_random`, which
/// draws other bytes: the fixture's files were made from these.
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The worktree's files at `version` (1 and 2 are the fixture's two checkpoints, 3 and 4
/// the ones this build adds): 40 small text files (solid blocks), a 300 KB text file (zstd
/// chunks; edited in the middle at version 2, so a delta), 70 KB of noise (raw chunks).
fn files(version: u32) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for i in 0..40u32 {
        let mut text = String::new();
        for j in 0..(10 + i * 25) {
            text.push_str(&format!("small file {i} line {j}: {}\n", j * i % 97));
        }
        if version >= 2 && i == 3 {
            text.push_str("edited at version 2\n");
        }
        if version >= 3 && i % 5 == 0 {
            text.insert_str(0, "edited at version 3\n");
        }
        if !(version >= 2 && i == 7) {
            files.insert(format!("small/s{i}.txt"), text.into_bytes());
        }
    }
    let mut big = String::new();
    for j in 0..12_000u32 {
        if version >= 2 && j == 6_000 {
            big.push_str("a line changed at version 2\n");
            continue;
        }
        big.push_str(&format!("big line {j}: {}\n", j * j % 9973));
    }
    files.insert("big.txt".into(), big.into_bytes());
    files.insert("noise.bin".into(), noise(70_000, 0x9e37_79b9_7f4a_7c15));
    if version >= 2 {
        files.insert("new.txt".into(), b"added at version 2\n".repeat(300));
    }
    if version >= 4 {
        let text: String = (0..3_000)
            .map(|j| format!("added at version 4: {j}\n"))
            .collect();
        files.insert("fourth.txt".into(), text.into_bytes());
    }
    if version >= 3 {
        files.insert("more/noise.bin".into(), noise(40_000, 7));
        for i in 0..20u32 {
            files.insert(
                format!("more/m{i}.rs"),
                format!("fn item_{i}() -> u32 {{ {i} }}\n")
                    .repeat(50 + i as usize)
                    .into_bytes(),
            );
        }
    }
    files
}

/// Makes the worktree hold exactly `version`'s files.
fn write_version(r: &Repo, version: u32) {
    for path in r.snapshot().keys() {
        let path = String::from_utf8_lossy(path).into_owned();
        if r.p(&path).is_file() {
            r.remove(&path);
        }
    }
    for (path, data) in files(version) {
        r.write(&path, &data);
    }
}

/// Asserts that the worktree holds exactly `version`'s files, byte for byte.
#[track_caller]
fn assert_holds(r: &Repo, version: u32) {
    let found: BTreeMap<String, Vec<u8>> = r
        .snapshot()
        .into_iter()
        .filter_map(|(path, node)| match node {
            Node::File { data, .. } => Some((String::from_utf8_lossy(&path).into_owned(), data)),
            _ => None,
        })
        .collect();
    let expected = files(version);
    assert_eq!(
        found.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "the files of version {version}"
    );
    for (path, data) in expected {
        assert!(found[&path] == data, "{path} of version {version} differs");
    }
}

/// The codec byte of every stored chunk or block in the store's packs, counted: each
/// pack's items are found through the index entries that point into it.
fn codecs(r: &Repo) -> BTreeMap<u8, usize> {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_read().unwrap();
    let index = txn.open_table(raw_store::CHUNKS).unwrap();
    let packs = txn.open_table(PACKS).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut counts = BTreeMap::new();
    for item in index.iter().unwrap() {
        let (_, value) = item.unwrap();
        let v = value.value();
        if !matches!(v[0], 0xB1..=0xB3) {
            continue;
        }
        let pack = u64::from_le_bytes(v[1..9].try_into().unwrap());
        let offset = u32::from_le_bytes(v[9..13].try_into().unwrap()) as usize;
        if seen.insert((pack, offset)) {
            let data = packs.get(pack).unwrap().unwrap();
            *counts.entry(data.value()[offset + 1]).or_default() += 1;
        }
    }
    counts
}

/// The store's format byte (`meta["format"]`).
fn store_format(r: &Repo) -> u8 {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(raw_store::META).unwrap();
    let format = meta.get("format").unwrap().unwrap().value().to_vec();
    assert_eq!(format.len(), 1, "{format:?}");
    format[0]
}

/// A repository holding the fixture's store, its worktree at version 2 (the fixture's
/// last checkpoint), and the ids of the fixture's checkpoints, oldest first.
fn from_fixture() -> (Repo, Vec<String>) {
    let r = Repo::new();
    std::fs::create_dir_all(r.store_path().parent().unwrap()).unwrap();
    std::fs::copy(fixture(), r.store_path()).unwrap();
    write_version(&r, 2);
    let mut ids = r.log_ids(true);
    ids.reverse();
    assert_eq!(ids.len(), 2, "the fixture's checkpoints");
    (r, ids)
}

#[test]
fn a_store_written_by_cb07bfc_restores_byte_exact() {
    let (r, ids) = from_fixture();
    // What the fixture holds: raw (0), zstd (1), a delta (2) and solid blocks (3).
    let before = codecs(&r);
    for codec in 0..=3 {
        assert!(before.contains_key(&codec), "codec {codec} in {before:?}");
    }
    r.ok(&["verify", "--read-data"]);
    for (version, id) in [(1, &ids[0]), (2, &ids[1])] {
        r.ok(&["restore", id]);
        assert_holds(&r, version);
    }
    // What this build did to it (restores, their safety saves) leaves it readable by
    // the build that wrote it.
    assert_eq!(store_format(&r), 2);
}

#[test]
fn gc_recompresses_old_and_new_chunks_into_large_blocks_and_every_checkpoint_restores() {
    let (r, mut ids) = from_fixture();
    write_version(&r, 3);
    ids.push(r.save("third, by this build"));
    let stored = |r: &Repo| {
        r.json(&["stats", "--json"])["stored_chunk_bytes"]
            .as_u64()
            .unwrap()
    };
    let before = stored(&r);
    assert!(!codecs(&r).contains_key(&4), "a save wrote a large block");
    assert_eq!(
        store_format(&r),
        2,
        "a store without large blocks is format 2"
    );
    let report = r.json(&["gc", "--json"]);
    let recompressed = &report["recompressed"];
    assert!(recompressed["packs"].as_u64().unwrap() > 0, "{report}");
    assert!(
        recompressed["stored_bytes_after"].as_u64() < recompressed["stored_bytes_before"].as_u64(),
        "{report}"
    );
    let after = codecs(&r);
    assert!(after.contains_key(&4), "gc wrote no large block: {after:?}");
    // Builds before codec 4 read up to format 2: they refuse this store as newer.
    assert_eq!(
        store_format(&r),
        3,
        "a store with large blocks is not format 3"
    );
    assert!(
        stored(&r) < before,
        "recompression did not shrink the chunks: {before} -> {}",
        stored(&r)
    );
    r.ok(&["verify", "--read-data"]);
    for (version, id) in [(1, &ids[0]), (2, &ids[1]), (3, &ids[2])] {
        r.ok(&["restore", id]);
        assert_holds(&r, version);
    }
    // The next gc finds nothing new to recompress and leaves the packs as they are;
    // what a save adds after it is recompressed by the gc after that.
    let packs = |r: &Repo| {
        let db = raw_store::open(&r.store_path());
        let txn = db.begin_read().unwrap();
        let packs = txn.open_table(PACKS).unwrap();
        let keys: Vec<u64> = packs
            .iter()
            .unwrap()
            .map(|i| i.unwrap().0.value())
            .collect();
        keys
    };
    let settled = packs(&r);
    r.ok(&["gc"]);
    assert_eq!(packs(&r), settled, "a gc with nothing new rewrote packs");
    write_version(&r, 4);
    ids.push(r.save("fourth"));
    let with_new = packs(&r);
    r.ok(&["gc"]);
    let regathered = packs(&r);
    assert!(
        settled.iter().all(|p| regathered.contains(p)),
        "old large blocks were rewritten"
    );
    assert!(
        with_new.iter().any(|p| !regathered.contains(p)),
        "the new save's packs were not recompressed"
    );
    r.ok(&["verify", "--read-data"]);
    for (version, id) in [(1, &ids[0]), (4, &ids[3]), (2, &ids[1])] {
        r.ok(&["restore", id]);
        assert_holds(&r, version);
    }
}

/// Remakes the fixture with the binary `GIT_CHECKPOINT_FIXTURE_BIN` (the release build
/// of cb07bfc made the committed one): `cargo test --test it make_the_cb07bfc_fixture
/// -- --ignored`.
#[test]
#[ignore = "remakes tests/fixtures/store-cb07bfc.redb with an older build"]
fn make_the_cb07bfc_fixture() {
    let bin = std::env::var("GIT_CHECKPOINT_FIXTURE_BIN").expect("GIT_CHECKPOINT_FIXTURE_BIN");
    let r = Repo::new();
    let save = |message: &str| {
        let mut cmd = std::process::Command::new(&bin);
        r.sb.isolate(&mut cmd);
        cmd.current_dir(&r.dir).args(["save", "-q", "-m", message]);
        assert!(cmd.status().unwrap().success());
    };
    write_version(&r, 1);
    // Past the filesystem clock's racy window, so that the stat cache vouches for the
    // first version and the second one's edited chunk is stored as a delta of it.
    std::thread::sleep(std::time::Duration::from_secs(2));
    save("first");
    std::thread::sleep(std::time::Duration::from_secs(2));
    write_version(&r, 2);
    std::thread::sleep(std::time::Duration::from_secs(2));
    save("second");
    // The same build's gc compacts the file, which removes nothing else.
    let mut gc = std::process::Command::new(&bin);
    r.sb.isolate(&mut gc);
    assert!(gc
        .current_dir(&r.dir)
        .args(["gc", "-q"])
        .status()
        .unwrap()
        .success());
    std::fs::copy(r.store_path(), fixture()).unwrap();
}

/// A crafted large block whose frame holds more than 1 MiB, or whose header claims a
/// terabyte, is a clear error in `verify` and `restore`, never a panic or an
/// allocation of that size.
#[test]
fn a_large_block_holding_too_much_is_an_error() {
    for crafted in [too_large_frame(), frame_claiming_a_terabyte()] {
        let (r, mut ids) = from_fixture();
        write_version(&r, 3);
        ids.push(r.save("third"));
        r.ok(&["gc"]);
        let (pack, offset, members) = a_large_block(&r);
        raw_store::edit(&r.store_path(), PACKS, pack, |data| {
            data[offset as usize..offset as usize + crafted.len()].copy_from_slice(&crafted);
        });
        for chunk in members {
            raw_store::edit(&r.store_path(), raw_store::CHUNKS, chunk, |entry| {
                entry[13..17].copy_from_slice(&(crafted.len() as u32).to_le_bytes());
            });
        }
        let verify = r.run(&["verify", "--read-data"]);
        assert_ne!(verify.code, 0, "verify found nothing\n{verify}");
        assert!(verify.stderr.contains("solid block"), "{verify}");
        write_version(&r, 1);
        let restore = r.run(&["restore", &ids[2]]);
        common::assert_no_panic(&restore, "restore");
        assert_eq!(restore.code, 1, "restore of a crafted block\n{restore}");
        assert!(restore.stderr.contains("solid block"), "{restore}");
    }
}

/// `[1][4]` and a frame of 2 MiB of zeros: twice what a large block may hold.
fn too_large_frame() -> Vec<u8> {
    let frame = zstd::bulk::compress(&vec![0u8; 2 << 20], 1).unwrap();
    [&[1u8, 4][..], &frame].concat()
}

/// `[1][4]` and a zstd frame header alone, claiming 1 TiB of content.
fn frame_claiming_a_terabyte() -> Vec<u8> {
    let mut crafted = vec![1u8, 4, 0x28, 0xb5, 0x2f, 0xfd, 0xe0];
    crafted.extend_from_slice(&(1u64 << 40).to_le_bytes());
    crafted
}

/// A codec-4 block of the store: its pack, its offset there, and its chunks.
fn a_large_block(r: &Repo) -> (u64, u32, Vec<u128>) {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_read().unwrap();
    let index = txn.open_table(raw_store::CHUNKS).unwrap();
    let packs = txn.open_table(PACKS).unwrap();
    let mut blocks: BTreeMap<(u64, u32), Vec<u128>> = BTreeMap::new();
    for item in index.iter().unwrap() {
        let (key, value) = item.unwrap();
        let v = value.value();
        if v[0] == 0xB3 {
            let pack = u64::from_le_bytes(v[1..9].try_into().unwrap());
            let offset = u32::from_le_bytes(v[9..13].try_into().unwrap());
            blocks.entry((pack, offset)).or_default().push(key.value());
        }
    }
    blocks
        .into_iter()
        .find(|((pack, offset), _)| {
            packs.get(*pack).unwrap().unwrap().value()[*offset as usize + 1] == 4
        })
        .map(|((pack, offset), members)| (pack, offset, members))
        .expect("a large block")
}

/// A damaged chunk does not stop `gc`: recompression moves what it cannot read as it is
/// (a damaged block whole, its chunks still in it), so `verify` finds the same damage
/// after it, and everything else is recompressed.
#[test]
fn gc_moves_damaged_chunks_as_they_are() {
    let (r, ids) = from_fixture();
    // A block of small files, and a chunk of big.txt stored alone (zstd).
    let (block_pack, block_offset, block_len) = first_item_of_codec(&r, 3);
    let (single_pack, single_offset, single_len) = first_item_of_codec(&r, 1);
    raw_store::edit(&r.store_path(), PACKS, block_pack, |data| {
        let middle = (block_offset + block_len / 2) as usize;
        for b in &mut data[middle..middle + 8] {
            *b ^= 0x5a;
        }
    });
    raw_store::edit(&r.store_path(), PACKS, single_pack, |data| {
        let middle = (single_offset + single_len / 2) as usize;
        data[middle] ^= 0x5a;
    });
    let problems = |r: &Repo| {
        let verify = r.run(&["verify", "--read-data"]);
        assert_ne!(verify.code, 0, "verify found nothing\n{verify}");
        verify
            .stderr
            .lines()
            .filter(|l| l.starts_with("damaged:"))
            .count()
    };
    let before = problems(&r);
    assert!(before >= 2, "{before}");
    r.ok(&["gc"]);
    assert!(
        codecs(&r).contains_key(&4),
        "gc wrote no large block: {:?}",
        codecs(&r)
    );
    assert_eq!(problems(&r), before, "gc changed what is damaged");
    let restore = r.run(&["restore", &ids[0]]);
    common::assert_no_panic(&restore, "restore");
    assert_eq!(restore.code, 1, "restore of damaged chunks\n{restore}");
}

/// The pack, offset and stored length of the first item (chunk or block) of `codec` in
/// the store.
fn first_item_of_codec(r: &Repo, codec: u8) -> (u64, u32, u32) {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_read().unwrap();
    let index = txn.open_table(raw_store::CHUNKS).unwrap();
    let packs = txn.open_table(PACKS).unwrap();
    let mut found = None;
    for item in index.iter().unwrap() {
        let (_, value) = item.unwrap();
        let v = value.value();
        if matches!(v[0], 0xB1 | 0xB3) {
            let pack = u64::from_le_bytes(v[1..9].try_into().unwrap());
            let offset = u32::from_le_bytes(v[9..13].try_into().unwrap());
            let len = u32::from_le_bytes(v[13..17].try_into().unwrap());
            if packs.get(pack).unwrap().unwrap().value()[offset as usize + 1] == codec {
                found = Some((pack, offset, len));
                break;
            }
        }
    }
    found.expect("an item of that codec")
}

/// Sets the store's chunking parameters to cut chunks of 1 to 4 MiB, larger than a pack
/// may hold, as a crafted or future store could.
fn allow_chunks_larger_than_a_pack(r: &Repo) {
    use git_checkpoint::format::chunk::ChunkParams;
    use git_checkpoint::format::codec;
    let params = ChunkParams {
        min: 1 << 20,
        avg: 2 << 20,
        max: 4 << 20,
    };
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_write().unwrap();
    txn.open_table(raw_store::META)
        .unwrap()
        .insert("chunking", codec::encode(&params).as_slice())
        .unwrap();
    txn.commit().unwrap();
}

/// A store whose chunking parameters allow chunks larger than a pack (up to 4 MiB):
/// such a chunk is copied as it is, overfilling its pack, and the recompression goes on
/// after it.
#[test]
fn gc_recompresses_a_store_of_chunks_larger_than_a_pack() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("a");
    allow_chunks_larger_than_a_pack(&r);
    write_version(&r, 3);
    r.write("huge.bin", &noise(3 << 20, 11));
    let id = r.save("a chunk larger than a pack, then small files");
    let before = r.snapshot();
    r.ok(&["gc"]);
    assert!(
        codecs(&r).contains_key(&4),
        "gc wrote no large block: {:?}",
        codecs(&r)
    );
    r.ok(&["verify", "--read-data"]);
    r.remove("huge.bin");
    r.ok(&["restore", &id]);
    assert!(r.snapshot() == before, "the restore differs");
}

/// An index entry that understates its chunk's content (a crafted one: here 2 MiB said
/// to be 1,000 bytes) does not stop `gc`: the chunk is copied as it is.
#[test]
fn gc_copies_a_chunk_whose_entry_understates_it() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("a");
    allow_chunks_larger_than_a_pack(&r);
    let text: String = (0..400_000).map(|j| format!("{j}\n")).collect();
    r.write("big.txt", &text.as_bytes()[..(2 << 20) - 1]);
    r.save("one chunk of 2 MiB");
    let big = {
        let db = raw_store::open(&r.store_path());
        let txn = db.begin_read().unwrap();
        let index = txn.open_table(raw_store::CHUNKS).unwrap();
        let found: Option<u128> = index
            .iter()
            .unwrap()
            .map(|i| i.unwrap())
            .find(|(_, v)| {
                let v = v.value();
                v[0] == 0xB1 && u32::from_le_bytes(v[17..21].try_into().unwrap()) > 1 << 20
            })
            .map(|(k, _)| k.value());
        found.expect("the 2 MiB chunk")
    };
    raw_store::edit(&r.store_path(), raw_store::CHUNKS, big, |entry| {
        entry[17..21].copy_from_slice(&1000u32.to_le_bytes());
    });
    let gc = r.run(&["gc"]);
    assert_eq!(gc.code, 0, "{gc}");
}

/// This build reads formats up to 3 and refuses the next as newer, changing nothing.
#[test]
fn a_store_of_a_format_after_3_is_refused_as_newer() {
    let (r, _) = from_fixture();
    raw_store::edit(&r.store_path(), raw_store::META, "format", |format| {
        *format = vec![4]
    });
    let before = std::fs::read(r.store_path()).unwrap();
    let out = r.run(&["log"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("uses format 4, newer"), "{out}");
    assert!(
        std::fs::read(r.store_path()).unwrap() == before,
        "the store changed"
    );
}
