//! Small chunks are compressed together in solid blocks (issue 15): a tree of many small
//! files round-trips byte for byte through them, gc takes dead chunks out of a block and
//! keeps the rest readable, stored sizes stay what the packs hold, and a damaged block is
//! a clear error.

use crate::common;
use common::raw_store::{self, CHUNKS, PACKS};
use common::{assert_no_panic, Repo};
use redb::{ReadableDatabase, ReadableTable};

/// First byte of an index entry of a chunk in a solid block.
const SOLID: u8 = 0xB3;

/// Compressible text unique to file `i`, 1 to 5 KiB: well under the 16 KiB below which
/// chunks go into blocks.
fn source(i: u64) -> Vec<u8> {
    let mut out = format!("// file {i}\n");
    for j in 0..(30 + i % 100) {
        out.push_str(&format!(
            "fn item_{i}_{j}() -> u64 {{ {j} * {i} + {} }}\n",
            j % 7
        ));
    }
    out.into_bytes()
}

fn write_sources(r: &Repo, range: std::ops::Range<u64>) {
    for i in range {
        r.write(format!("src{}/f{i}.rs", i % 8), &source(i));
    }
}

/// The index entries of chunks in solid blocks: (chunk, pack, block offset, block
/// length, content length, start in the block), and the total bytes of all packs.
struct Layout {
    solid: Vec<(u128, u64, u32, u32, u32, u32)>,
    pack_bytes: u64,
}

fn u32_at(v: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(v[i..i + 4].try_into().unwrap())
}

fn layout(r: &Repo) -> Layout {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_read().unwrap();
    let index = txn.open_table(CHUNKS).unwrap();
    let mut solid = Vec::new();
    for item in index.iter().unwrap() {
        let (key, value) = item.unwrap();
        let v = value.value();
        if v[0] == SOLID {
            let pack = u64::from_le_bytes(v[1..9].try_into().unwrap());
            solid.push((
                key.value(),
                pack,
                u32_at(v, 9),
                u32_at(v, 13),
                u32_at(v, 17),
                u32_at(v, 21),
            ));
        }
    }
    let packs = txn.open_table(PACKS).unwrap();
    let pack_bytes = packs
        .iter()
        .unwrap()
        .map(|item| item.unwrap().1.value().len() as u64)
        .sum();
    Layout { solid, pack_bytes }
}

fn stored_chunk_bytes(r: &Repo) -> u64 {
    r.json(&["stats", "--json"])["stored_chunk_bytes"]
        .as_u64()
        .unwrap()
}

/// Blocks hold many chunks each.
fn blocks(l: &Layout) -> std::collections::HashSet<(u64, u32)> {
    l.solid.iter().map(|s| (s.1, s.2)).collect()
}

#[test]
fn many_small_files_round_trip_through_solid_blocks() {
    let r = Repo::new();
    write_sources(&r, 0..500);
    let first = r.save("first");
    let first_files = r.snapshot();
    let l = layout(&r);
    let blocks = blocks(&l);
    assert!(
        l.solid.len() >= 400 && blocks.len() * 20 <= l.solid.len(),
        "{} chunks in {} solid blocks: small files were not compressed together",
        l.solid.len(),
        blocks.len()
    );
    // A block's chunks' shares add up to the block: stored sizes are what packs hold.
    assert_eq!(stored_chunk_bytes(&r), l.pack_bytes);

    // Most files stay (their chunks are shared), some change, some are new.
    for i in (0..500).step_by(10) {
        r.write(format!("src{}/f{i}.rs", i % 8), b"changed\n");
    }
    write_sources(&r, 500..700);
    let second = r.save("second");
    let second_files = r.snapshot();
    assert!(layout(&r).solid.len() > l.solid.len());

    r.ok(&["verify", "--read-data"]);
    r.ok(&["restore", &first]);
    assert!(
        r.snapshot() == first_files,
        "first checkpoint restores exactly"
    );
    r.ok(&["restore", &second]);
    assert!(
        r.snapshot() == second_files,
        "second checkpoint restores exactly"
    );
    // A diff reads single files out of the middle of blocks.
    let shown = r.ok(&["show", &second]);
    assert!(
        shown
            .stdout
            .contains("-fn item_250_3() -> u64 { 3 * 250 + 3 }"),
        "{shown}"
    );
}

#[test]
fn gc_takes_dead_chunks_out_of_blocks_and_keeps_the_rest() {
    let r = Repo::new();
    write_sources(&r, 0..900);
    r.save("all");
    let before = layout(&r);
    // Four files in five go: every block loses most of its chunks, a fifth stays live.
    for i in (0..900u64).filter(|i| i % 5 != 0) {
        r.remove(format!("src{}/f{i}.rs", i % 8));
    }
    let kept = r.snapshot();
    let id = r.save("a fifth");

    let gc = r.json(&["gc", "--keep", "1", "--json"]);
    let removed = gc["stored_bytes_removed"].as_u64().unwrap();
    let after = layout(&r);
    // The live chunks moved to new blocks, without the dead ones.
    assert_eq!(after.solid.len(), 180, "live chunks in blocks after gc");
    assert!(
        blocks(&after).is_disjoint(&blocks(&before)),
        "gc kept a block that lost most of its chunks"
    );
    assert!(
        after.pack_bytes * 3 < before.pack_bytes,
        "packs hold {} bytes of {} after gc",
        after.pack_bytes,
        before.pack_bytes
    );
    // Honest figures: gc removed the dead chunks' shares of their blocks (and a few
    // trees), never more than the packs held; the packs shrank by a little less, as
    // the live chunks, compressed again in fewer blocks, take more than their old
    // shares. The live chunks' sizes are what the packs now hold.
    let freed = before.pack_bytes - after.pack_bytes;
    assert!(
        removed <= before.pack_bytes && removed.abs_diff(freed) < freed / 2,
        "gc reported {removed} bytes removed, packs shrank by {freed}"
    );
    assert_eq!(stored_chunk_bytes(&r), after.pack_bytes);

    r.ok(&["verify", "--read-data"]);
    for i in (0..900u64).filter(|i| i % 5 == 0) {
        r.remove(format!("src{}/f{i}.rs", i % 8));
    }
    r.ok(&["restore", &id]);
    assert!(r.snapshot() == kept, "restored tree differs after gc");
}

/// `verify --read-data` and a full restore both fail with `expect` in their output,
/// without a panic.
fn assert_damage_reported(r: &Repo, id: &str, expect: &str) {
    let verify = r.run(&["verify", "--read-data"]);
    assert_no_panic(&verify, "verify");
    assert_ne!(verify.code, 0, "verify found nothing\n{verify}");
    assert!(
        verify.stdout.contains(expect) || verify.stderr.contains(expect),
        "verify does not say {expect:?}\n{verify}"
    );
    for dir in 0..8 {
        r.remove(format!("src{dir}"));
    }
    let restore = r.run(&["restore", id]);
    assert_no_panic(&restore, "restore");
    assert_eq!(restore.code, 1, "restore of damaged blocks\n{restore}");
}

#[test]
fn a_damaged_solid_block_is_an_error() {
    let r = Repo::new();
    write_sources(&r, 0..200);
    let id = r.save("small files");
    let l = layout(&r);
    let &(_, pack, offset, len, _, _) = l.solid.first().expect("a solid block");
    // Flip bytes inside the block's zstd frame.
    raw_store::edit(&r.store_path(), PACKS, pack, |data| {
        let middle = (offset + len / 2) as usize;
        for b in &mut data[middle..middle + 8] {
            *b ^= 0x5a;
        }
    });
    assert_damage_reported(&r, &id, "solid block");
}

#[test]
fn a_solid_entry_pointing_outside_its_block_is_an_error() {
    let r = Repo::new();
    write_sources(&r, 0..200);
    let id = r.save("small files");
    let l = layout(&r);
    let &(chunk, ..) = l.solid.first().expect("a solid block");
    // The chunk's content would start past the end of the block's content.
    raw_store::edit(&r.store_path(), CHUNKS, chunk, |entry| {
        entry[21..25].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    assert_damage_reported(&r, &id, "outside its solid block");

    // A block length that cuts the frame short, and one that is not a block at all.
    let r = Repo::new();
    write_sources(&r, 0..200);
    let id = r.save("small files");
    let l = layout(&r);
    let (a, b) = (l.solid[0].0, l.solid[1].0);
    raw_store::edit(&r.store_path(), CHUNKS, a, |entry| {
        entry[13..17].copy_from_slice(&3u32.to_le_bytes())
    });
    raw_store::edit(&r.store_path(), CHUNKS, b, |entry| {
        entry[13..17].copy_from_slice(&0u32.to_le_bytes())
    });
    assert_damage_reported(&r, &id, "solid block");
}

/// The reader threads fill and compress the solid blocks themselves (the writer only
/// appends them): a first save of many small files, read by four threads, fills many
/// blocks that each hold a chunk once, and round-trips byte for byte; a block of small
/// files zstd cannot shrink is stored as its chunks one by one.
#[test]
fn a_first_save_read_by_several_threads_fills_many_blocks_and_round_trips() {
    let r = Repo::new();
    write_sources(&r, 0..1500);
    // The same content under several names, read by different threads: stored once.
    for i in 0..40 {
        r.write(format!("copies/c{i}.rs"), &source(7));
    }
    // Files of one large chunk each, sent on their own among the blocks.
    for i in 0..6 {
        let mut big = common::pseudo_random(40 << 10, i);
        big.extend_from_slice(&source(2000 + i));
        r.write(format!("big/b{i}.bin"), &big);
    }
    let threads = [("RAYON_NUM_THREADS", "4")];
    let saved = r.run_env(&["save", "-m", "first", "--json"], &threads);
    assert_eq!(saved.code, 0, "{saved}");
    let first = r.current();
    let files = r.snapshot();
    let l = layout(&r);
    let blocks = blocks(&l);
    // 1,500 distinct small files, 4.9 MB, fill about 19 blocks of 256 KiB. The block
    // still open when the scan ends may hold a single chunk, which is stored on its own
    // (`OpenBlock::seal`): which file is last depends on the threads' timing.
    assert!(
        blocks.len() >= 15 && l.solid.len() >= 1499,
        "{} chunks in {} solid blocks",
        l.solid.len(),
        blocks.len()
    );
    // Every chunk lies inside its block, and no block overlaps another: each was
    // appended whole.
    for &(chunk, _, _, _, raw_len, start) in &l.solid {
        assert!(
            u64::from(start) + u64::from(raw_len) <= 256 << 10,
            "chunk {chunk:x} lies outside a block's content"
        );
    }
    // A chunk stored twice would leave bytes in the packs that no entry is charged.
    assert_eq!(stored_chunk_bytes(&r), l.pack_bytes);

    // Small files zstd cannot shrink: their block is stored as its chunks.
    let before = l.solid.len();
    for i in 0..30 {
        r.write(
            format!("noise/n{i}.bin"),
            &common::pseudo_random(4 << 10, 100 + i),
        );
    }
    let saved = r.run_env(&["save", "-m", "noise", "--json"], &threads);
    assert_eq!(saved.code, 0, "{saved}");
    let second = r.current();
    let second_files = r.snapshot();
    let l = layout(&r);
    assert_eq!(
        l.solid.len(),
        before,
        "incompressible chunks went into a block"
    );
    assert_eq!(stored_chunk_bytes(&r), l.pack_bytes);

    r.ok(&["verify", "--read-data"]);
    for top in [
        "src0", "src1", "src2", "src3", "src4", "src5", "src6", "src7",
    ] {
        r.remove(top);
    }
    r.remove("copies");
    r.remove("big");
    r.remove("noise");
    r.ok(&["restore", &first]);
    assert!(
        r.snapshot() == files,
        "the first checkpoint restores exactly"
    );
    r.ok(&["restore", &second]);
    assert!(
        r.snapshot() == second_files,
        "the second checkpoint restores exactly"
    );
}
