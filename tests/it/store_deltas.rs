//! Deltas: a new chunk of a file the last save stored is compressed against the chunk
//! it was edited from (its base), or that chunk's base when it is four deep, in chains a
//! read follows at most four deep; gc keeps
//! every base a kept chunk needs, also when it rewrites the pack that holds it; a missing
//! base, or a chain that loops, is a clear error from verify and restore.

use crate::common;
use std::collections::HashMap;

use common::raw_store::{self, CHUNKS};
use common::{pseudo_random, Repo};
use redb::{ReadableDatabase, ReadableTable};

const PACKED: u8 = 0xB1;
const PACKED_DELTA: u8 = 0xB2;
const PACKED_SOLID: u8 = 0xB3;
const MAX_DEPTH: u8 = 4;

/// A chunk index entry, as far as these tests look at it.
#[derive(Clone, Debug)]
struct Indexed {
    stored_len: u32,
    /// Depth and base of a delta.
    delta: Option<(u8, u128)>,
}

fn index(r: &Repo) -> HashMap<u128, Indexed> {
    let db = raw_store::open(&r.store_path());
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(CHUNKS).unwrap();
    let mut out = HashMap::new();
    for item in table.iter().unwrap() {
        let (key, value) = item.unwrap();
        let v = value.value();
        let stored_len = u32::from_le_bytes(v[13..17].try_into().unwrap());
        let delta = match v[0] {
            // A small chunk in a solid block: never a delta.
            PACKED | PACKED_SOLID => None,
            PACKED_DELTA => Some((v[21], u128::from_le_bytes(v[22..38].try_into().unwrap()))),
            other => panic!("unexpected index entry kind {other:#x}"),
        };
        out.insert(key.value(), Indexed { stored_len, delta });
    }
    out
}

/// Source-like text: lines of words from a small vocabulary, so that it compresses as
/// code does (about 3x) but no two files, or parts of one, are alike.
fn text(len: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "static", "int", "return", "struct", "char", "if", "else", "for", "while", "const",
        "size_t", "void", "NULL", "buf", "len", "err",
    ];
    let noise = pseudo_random(len, seed);
    let mut out = Vec::with_capacity(len + 16);
    let mut i = 0;
    while out.len() < len {
        out.extend_from_slice(WORDS[(noise[i % len] % 16) as usize].as_bytes());
        out.push(if noise[(i + 1) % len].is_multiple_of(8) {
            b'\n'
        } else {
            b' '
        });
        i += 2;
    }
    out
}

/// Saves once the files written are past the filesystem clock's racy window: only then
/// does the stat cache keep their entries, which name the previous version a delta is
/// made against.
fn save_settled(r: &Repo, message: &str) -> String {
    std::thread::sleep(std::time::Duration::from_millis(2100));
    r.save(message)
}

/// A 12 KiB file saved, then `edits` times appended a line to and saved again (one
/// chunk each time: the file stays under the smallest cut). Returns the checkpoints with
/// the file's content at each.
fn edited(r: &Repo, edits: usize) -> Vec<(String, Vec<u8>)> {
    let content = text(12 << 10, 7);
    r.write("src/main.c", &content);
    let mut saved = vec![(save_settled(r, "first"), content.clone())];
    saved.extend(edited_more(r, &saved, edits));
    saved
}

fn restores_exactly(r: &Repo, saved: &[(String, Vec<u8>)]) {
    for (id, content) in saved.iter().rev() {
        r.ok(&["restore", id]);
        assert!(
            r.read("src/main.c") == *content,
            "checkpoint {id} restored other bytes"
        );
    }
}

#[test]
fn small_edits_are_stored_as_short_delta_chains_and_restore_exactly() {
    let r = Repo::new();
    // More edits than a chain is deep: past the fourth, each is a delta of the version
    // below the deepest (a sibling at depth four), never a whole chunk again.
    let saved = edited(&r, 7);
    let index = index(&r);
    let deltas: Vec<&Indexed> = index.values().filter(|e| e.delta.is_some()).collect();
    let full_len = index
        .values()
        .filter(|e| e.delta.is_none())
        .map(|e| e.stored_len)
        .max()
        .unwrap();
    // Seven edits, seven deltas: one whole chunk (the first version) in all.
    assert_eq!(deltas.len(), 7, "edits stored as deltas: {index:?}");
    let at_four = deltas
        .iter()
        .filter(|e| e.delta.unwrap().0 == MAX_DEPTH)
        .count();
    assert_eq!(
        at_four, 4,
        "versions 4 to 7 are deltas four deep: {index:?}"
    );
    for delta in &deltas {
        assert!(
            delta.stored_len * 10 < full_len,
            "a one-line edit took {} bytes as a delta, the file {full_len} whole",
            delta.stored_len
        );
    }
    // Each chain is as deep as its entries say, and no deeper than four.
    for entry in index.values() {
        let (mut depth, mut at) = (0, entry.clone());
        while let Some((recorded, base)) = at.delta {
            assert_eq!(recorded, entry.delta.unwrap().0 - depth);
            depth += 1;
            at = index[&base].clone();
        }
        assert!(depth <= MAX_DEPTH, "a chain {depth} deep");
    }
    r.ok(&["verify", "--read-data"]);
    restores_exactly(&r, &saved);
}

#[test]
fn gc_keeps_the_bases_kept_checkpoints_need_even_when_it_rewrites_their_pack() {
    let r = Repo::new();
    // Incompressible neighbours in the first pack, which go: gc rewrites that pack, and
    // the full chunk every delta chain starts from moves with it.
    for i in 0..40u64 {
        r.write(format!("other/f{i}.bin"), &pseudo_random(3072, i + 1));
    }
    let mut saved = edited(&r, 2);
    for i in 0..40u64 {
        r.remove(format!("other/f{i}.bin"));
    }
    saved.extend(edited_more(&r, &saved, 1));
    let before = index(&r);
    assert!(before.values().any(|e| e.delta.is_some()));

    // Only the last checkpoint stays: everything its chunk is a delta of is otherwise
    // unreachable.
    r.ok(&["gc", "--keep", "1"]);
    let after = index(&r);
    let last = saved.last().unwrap();
    r.ok(&["verify", "--read-data"]);
    restores_exactly(&r, std::slice::from_ref(last));
    assert!(
        after.len() < before.len(),
        "gc removed nothing: {} chunks before, {} after",
        before.len(),
        after.len()
    );
    // Once the file goes, its whole chain goes.
    r.remove("src/main.c");
    r.save("no file");
    r.ok(&["gc", "--keep", "1"]);
    assert!(
        index(&r).values().all(|e| e.delta.is_none()),
        "bases outlived every chunk that needed them"
    );
}

/// `n` more edits on top of the last of `saved`, each saved.
fn edited_more(r: &Repo, saved: &[(String, Vec<u8>)], n: usize) -> Vec<(String, Vec<u8>)> {
    let mut content = saved.last().unwrap().1.clone();
    (0..n)
        .map(|i| {
            content.extend_from_slice(format!("/* more {i} */\n").as_bytes());
            r.write("src/main.c", &content);
            (save_settled(r, &format!("edit {i}")), content.clone())
        })
        .collect()
}

fn deepest_delta(r: &Repo) -> (u128, u8, u128) {
    index(r)
        .into_iter()
        .filter_map(|(id, e)| e.delta.map(|(depth, base)| (id, depth, base)))
        .max_by_key(|(_, depth, _)| *depth)
        .expect("a delta")
}

#[test]
fn a_missing_base_is_a_clear_error_from_verify_and_restore() {
    let r = Repo::new();
    let saved = edited(&r, 2);
    let (_, _, base) = deepest_delta(&r);
    {
        let db = raw_store::open(&r.store_path());
        let txn = db.begin_write().unwrap();
        txn.open_table(CHUNKS).unwrap().remove(base).unwrap();
        txn.commit().unwrap();
    }
    let base_hex = format!("{base:032x}");
    for args in [&["verify"][..], &["verify", "--read-data"]] {
        let out = r.run(args);
        assert_ne!(out.code, 0, "verify passed a delta without its base");
        assert!(
            out.stderr.contains(&base_hex) && out.stderr.contains("delta base"),
            "verify did not name the missing base: {out:?}"
        );
    }
    r.write("src/main.c", b"elsewhere\n");
    r.save("elsewhere");
    let out = r.run(&["restore", &saved.last().unwrap().0]);
    assert_ne!(out.code, 0, "restore went ahead without a base");
    assert!(
        out.stderr.contains("delta base") && out.stderr.contains(&base_hex),
        "restore did not say which base is missing: {out:?}"
    );
    assert_eq!(
        r.read("src/main.c"),
        b"elsewhere\n",
        "a failed restore changed the file"
    );
}

#[test]
fn a_chain_that_loops_or_lies_about_its_depth_is_an_error_not_a_hang() {
    let r = Repo::new();
    let saved = edited(&r, 2);
    let (top, depth, base) = deepest_delta(&r);
    assert_eq!(depth, 2);
    // The base now names the top as its own base, one deeper than the top: a loop.
    raw_store::edit(&r.store_path(), CHUNKS, base, |v| {
        v[0] = PACKED_DELTA;
        v.truncate(21);
        v.push(3);
        v.extend_from_slice(&top.to_le_bytes());
    });
    // The middle checkpoint's chunk is that base: reading it walks the loop.
    for args in [&["verify", "--read-data"][..], &["restore", &saved[1].0]] {
        let out = r.run(args);
        assert_ne!(out.code, 0, "{args:?} passed a looping chain");
        assert!(
            format!("{}{}", out.stdout, out.stderr).contains("chain of delta bases"),
            "{args:?} did not name the looping chain: {out:?}"
        );
    }
}
