//! Chunks live in packs: gc rewrites packs that are mostly dead, and a store written
//! before packs (every chunk in its index entry) is read, upgraded, and keeps working.

use crate::common;
use std::os::unix::fs::MetadataExt;

use common::raw_store::{self, CHUNKS, META, PACKS};
use common::{pseudo_random, Repo};
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

fn disk_bytes(r: &Repo) -> u64 {
    std::fs::metadata(r.store_path()).unwrap().blocks() * 512
}

/// 600 files of 3 KiB of incompressible bytes: about 1.8 MiB of chunks, four packs.
fn write_files(r: &Repo) {
    for i in 0..600u64 {
        r.write(format!("d{}/f{i}.bin", i % 10), &pseudo_random(3072, i + 1));
    }
}

#[test]
fn gc_rewrites_packs_that_lost_most_of_their_chunks() {
    let r = Repo::new();
    write_files(&r);
    r.save("all");
    // Two files in three go; every pack keeps a third of its chunks.
    for i in (0..600u64).filter(|i| i % 3 != 0) {
        r.remove(format!("d{}/f{i}.bin", i % 10));
    }
    let kept = r.snapshot();
    r.save("a third");
    let before = disk_bytes(&r);

    r.ok(&["gc", "--keep", "1"]);
    let after = disk_bytes(&r);
    // Without rewriting, no pack would go: each still holds live chunks.
    assert!(
        after * 2 < before,
        "gc left {after} bytes of {before}: mostly dead packs were not rewritten"
    );
    r.ok(&["verify", "--read-data"]);
    // The moved chunks read back exactly.
    for i in (0..600u64).filter(|i| i % 3 == 0) {
        r.remove(format!("d{}/f{i}.bin", i % 10));
    }
    let id = r.current();
    r.ok(&["restore", &id]);
    assert!(
        r.snapshot() == kept,
        "restored tree differs after the packs were rewritten"
    );
}

/// Rewrites the store as a build before packs wrote it: every chunk's stored bytes in
/// its index entry, no packs table, store format 1.
fn downgrade_to_inline_chunks(r: &Repo) {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_write().unwrap();
    {
        let packs = txn.open_table(PACKS).unwrap();
        let mut index = txn.open_table(CHUNKS).unwrap();
        let entries: Vec<(u128, Vec<u8>)> = index
            .iter()
            .unwrap()
            .map(|item| {
                let (key, value) = item.unwrap();
                (key.value(), value.value().to_vec())
            })
            .collect();
        assert!(!entries.is_empty());
        for (id, entry) in entries {
            assert_eq!(entry[0], 0xB1, "test setup: every chunk is in a pack");
            let pack = u64::from_le_bytes(entry[1..9].try_into().unwrap());
            let offset = u32::from_le_bytes(entry[9..13].try_into().unwrap()) as usize;
            let len = u32::from_le_bytes(entry[13..17].try_into().unwrap()) as usize;
            let stored = packs.get(pack).unwrap().unwrap().value()[offset..offset + len].to_vec();
            index.insert(id, stored.as_slice()).unwrap();
        }
    }
    txn.delete_table(PACKS).unwrap();
    txn.open_table(META)
        .unwrap()
        .insert("format", [1u8].as_slice())
        .unwrap();
    txn.commit().unwrap();
}

#[test]
fn a_store_from_before_packs_is_read_and_upgraded() {
    let r = Repo::new();
    write_files(&r);
    let first = r.save("first");
    let first_files = r.snapshot();
    downgrade_to_inline_chunks(&r);

    // Reading works on the old layout, and the first write upgrades it.
    r.ok(&["verify", "--read-data"]);
    r.write("d0/f0.bin", b"changed\n");
    r.write("new.txt", b"new\n");
    let second = r.save("second");
    let second_files = r.snapshot();
    {
        let db = raw_store::open(&r.store_path());
        let txn = db.begin_read().unwrap();
        let format = txn
            .open_table(META)
            .unwrap()
            .get("format")
            .unwrap()
            .unwrap()
            .value()
            .to_vec();
        assert_eq!(format, vec![2]);
        assert!(
            txn.open_table(PACKS).unwrap().len().unwrap() > 0,
            "new chunks went to a pack"
        );
    }
    r.ok(&["verify", "--read-data"]);
    r.ok(&["restore", &first]);
    assert!(r.snapshot() == first_files, "old chunks restore exactly");
    r.ok(&["restore", &second]);
    assert!(r.snapshot() == second_files, "new chunks restore exactly");
    // gc deletes inline chunks and packed ones alike.
    r.ok(&["gc", "--keep", "1"]);
    r.ok(&["verify", "--read-data"]);
}

/// Rewrites every chunk in a solid block as a chunk packed alone, one pack each, as
/// builds before solid blocks stored them, and deletes the packs that held the blocks.
fn unpack_solid_blocks(r: &Repo) {
    use git_checkpoint::format::chunk::{decode_block, encode_chunk};
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_write().unwrap();
    {
        let mut packs = txn.open_table(PACKS).unwrap();
        let mut index = txn.open_table(CHUNKS).unwrap();
        let solid: Vec<(u128, Vec<u8>)> = index
            .iter()
            .unwrap()
            .map(|item| {
                let (key, value) = item.unwrap();
                (key.value(), value.value().to_vec())
            })
            .filter(|(_, entry)| entry[0] == 0xB3)
            .collect();
        assert!(solid.len() > 100, "test setup: small files went to blocks");
        let u32_at = |v: &[u8], i: usize| u32::from_le_bytes(v[i..i + 4].try_into().unwrap());
        let first_new = packs.last().unwrap().unwrap().0.value() + 1;
        let mut old_packs = std::collections::BTreeSet::new();
        for (next, (id, entry)) in (first_new..).zip(solid) {
            let pack = u64::from_le_bytes(entry[1..9].try_into().unwrap());
            let (offset, len) = (u32_at(&entry, 9) as usize, u32_at(&entry, 13) as usize);
            let (raw_len, start) = (u32_at(&entry, 17) as usize, u32_at(&entry, 21) as usize);
            let block = packs.get(pack).unwrap().unwrap().value()[offset..offset + len].to_vec();
            let content = decode_block(&block).unwrap()[start..start + raw_len].to_vec();
            let stored = encode_chunk(&content, 1);
            packs.insert(next, stored.as_slice()).unwrap();
            let mut moved = vec![0xB1];
            moved.extend_from_slice(&next.to_le_bytes());
            moved.extend_from_slice(&0u32.to_le_bytes());
            moved.extend_from_slice(&(stored.len() as u32).to_le_bytes());
            moved.extend_from_slice(&(raw_len as u32).to_le_bytes());
            index.insert(id, moved.as_slice()).unwrap();
            old_packs.insert(pack);
        }
        for pack in old_packs {
            packs.remove(pack).unwrap();
        }
    }
    txn.commit().unwrap();
}

#[test]
fn a_store_of_chunks_packed_one_by_one_reads_and_takes_solid_blocks() {
    let r = Repo::new();
    for i in 0..300u64 {
        r.write(
            format!("d{}/f{i}.txt", i % 10),
            format!("file {i}\n").repeat(50 + i as usize).as_bytes(),
        );
    }
    let first = r.save("first");
    let first_files = r.snapshot();
    unpack_solid_blocks(&r);

    r.ok(&["verify", "--read-data"]);
    for i in 300..400u64 {
        r.write(
            format!("new/f{i}.txt"),
            format!("new {i}\n").repeat(80).as_bytes(),
        );
    }
    r.remove("d3");
    let second = r.save("second");
    let second_files = r.snapshot();
    r.ok(&["verify", "--read-data"]);
    r.ok(&["restore", &first]);
    assert!(r.snapshot() == first_files, "old chunks restore exactly");
    r.ok(&["restore", &second]);
    assert!(r.snapshot() == second_files, "new chunks restore exactly");
    // gc drops old single chunks and keeps the rest, in either layout, readable.
    r.ok(&["gc", "--keep", "1"]);
    r.ok(&["verify", "--read-data"]);
    r.ok(&["restore", &second]);
    assert!(r.snapshot() == second_files, "restores exactly after gc");
}
