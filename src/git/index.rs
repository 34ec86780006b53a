//! The entries of git's index, read straight from `$GIT_DIR/index`.
//!
//! A save needs the tracked paths to find files that an ignore rule matches although git
//! tracks them. Asking `git ls-files` costs a process and a full parse on a 2-core
//! machine, while the walk wants both cores; the index's entries are simple to read.
//! A watched save compares the index it recorded with the current one, entry by entry
//! ([`changed_paths`]), to look again at only the paths a `git add` or `git commit`
//! changed. Only what this module knows for certain is read: index versions 2 to 4
//! without a split or sparse index. Anything else is [`Unsupported`], and the caller asks
//! git (or walks).

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The index holds something this reader does not handle; ask git instead.
#[derive(Debug)]
pub struct Unsupported;

/// Bytes of the fixed part of an entry before the hash: ctime, mtime, dev, ino, mode,
/// uid, gid, size (4 bytes each but the two times, which are 8).
const STAT_BYTES: usize = 40;
/// Where the mode is among those bytes.
const MODE_AT: usize = 24;
/// Entry flag: an extended flags word follows (version 3 and later).
const EXTENDED: u16 = 0x4000;
/// Entry flags: the merge stage (0, or 1 to 3 for a conflict's sides).
const STAGE_MASK: u16 = 0x3000;
const STAGE_SHIFT: u16 = 12;
/// The entry's mode is a directory: a sparse index's collapsed directory.
const DIRECTORY_MODE: u32 = 0o040000;
const MODE_TYPE_MASK: u32 = 0o170000;
/// How much of an index is read at a time.
const READ_BUFFER: usize = 64 << 10;

/// The paths the index at `path` holds, in index order (sorted by bytes), with a conflict's
/// stages listed once each. A missing index holds nothing. `hash_len` is the object name
/// length: 20 for SHA-1 repositories, 32 for SHA-256. The file is read as it is parsed,
/// never whole: at a million files it is some 90 MB, which a save would hold beside the
/// paths (docs/design.md, "Save", memory).
pub fn tracked_paths(path: &Path, hash_len: usize) -> Result<Vec<Vec<u8>>, Unsupported> {
    tracked_paths_where(path, hash_len, |_| true)
}

/// The paths of [`tracked_paths`] that `keep` keeps, the others never held.
pub fn tracked_paths_where(
    path: &Path,
    hash_len: usize,
    mut keep: impl FnMut(&[u8]) -> bool,
) -> Result<Vec<Vec<u8>>, Unsupported> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(_) => return Err(Unsupported),
    };
    let mut entries = Entries::of_file(file, hash_len)?;
    collect_paths(&mut entries, &mut keep).ok_or(Unsupported)
}

/// The paths of `entries`, each once, kept where `keep` says so.
fn collect_paths<R: BufRead>(
    entries: &mut Entries<R>,
    keep: &mut dyn FnMut(&[u8]) -> bool,
) -> Option<Vec<Vec<u8>>> {
    // The count is the file's word: reserve no more entries than its bytes can hold.
    let smallest_entry = STAT_BYTES + entries.hash_len + 2 + 1;
    let mut paths: Vec<Vec<u8>> =
        Vec::with_capacity(entries.remaining.min(entries.at.len / smallest_entry));
    while let Some(entry) = entries.next_entry()? {
        if paths.last().map(Vec::as_slice) != Some(entry.path) && keep(entry.path) {
            paths.push(entry.path.to_vec());
        }
    }
    Some(paths)
}

/// The paths whose entries differ between the index files `old` and `new`: in one and
/// not the other, or with another mode or object id (for any stage); sorted, each once.
/// Stat data is not compared: git refreshes it on a commit and it decides nothing a save
/// captures. Both files are read side by side as they are parsed, so memory stays in
/// proportion to the differences, not the index. `None` when either cannot be read
/// ([`Unsupported`]) or more than `limit` paths differ.
pub fn changed_paths(old: File, new: File, hash_len: usize, limit: usize) -> Option<Vec<Vec<u8>>> {
    let old = Entries::of_file(old, hash_len).ok()?;
    let new = Entries::of_file(new, hash_len).ok()?;
    changed_entries(old, new, limit)
}

/// [`changed_paths`] of the indexes `old` and `new` read.
fn changed_entries<R: BufRead, S: BufRead>(
    mut old: Entries<R>,
    mut new: Entries<S>,
    limit: usize,
) -> Option<Vec<Vec<u8>>> {
    let mut changed: Vec<Vec<u8>> = Vec::new();
    old.advance()?;
    new.advance()?;
    loop {
        let (step_old, step_new) = match (old.current(), new.current()) {
            (None, None) => break,
            (Some(gone), None) => {
                note(&mut changed, gone.path);
                (true, false)
            }
            (None, Some(added)) => {
                note(&mut changed, added.path);
                (false, true)
            }
            (Some(a), Some(b)) => match (a.path, a.stage).cmp(&(b.path, b.stage)) {
                Ordering::Less => {
                    note(&mut changed, a.path);
                    (true, false)
                }
                Ordering::Greater => {
                    note(&mut changed, b.path);
                    (false, true)
                }
                Ordering::Equal => {
                    if a.mode != b.mode || a.oid != b.oid {
                        note(&mut changed, a.path);
                    }
                    (true, true)
                }
            },
        };
        if changed.len() > limit {
            return None;
        }
        if step_old {
            old.advance()?;
        }
        if step_new {
            new.advance()?;
        }
    }
    // The side-by-side reading holds only for indexes sorted as git writes them.
    if !(old.in_order && new.in_order) {
        return None;
    }
    Some(changed)
}

/// Adds `path` to `changed` (sorted) unless it is the last one there already.
fn note(changed: &mut Vec<Vec<u8>>, path: &[u8]) {
    if changed.last().map(Vec::as_slice) != Some(path) {
        changed.push(path.to_vec());
    }
}

/// An entry of the index, as [`Entries`] reads it.
struct Entry<'a> {
    path: &'a [u8],
    /// 0, or the side of a conflict (1 to 3).
    stage: u16,
    mode: u32,
    /// The object id.
    oid: &'a [u8],
}

/// The entries of an index, read front to back one at a time (index order: path bytes,
/// then stage), holding only the current one: each [`Entry`] borrows the reader.
struct Entries<R> {
    at: Cursor<R>,
    version: u32,
    hash_len: usize,
    /// Entries not read yet, as the header counts them.
    remaining: usize,
    /// The current entry's fields, valid while `has_current`.
    path: Vec<u8>,
    stage: u16,
    mode: u32,
    oid: Vec<u8>,
    has_current: bool,
    /// The entry before the current one: version 4 names a path by what it keeps of
    /// this one, and the order is checked against it.
    previous: Vec<u8>,
    previous_stage: u16,
    /// Whether every entry so far came after the one before it.
    in_order: bool,
    /// Whether the extensions after the last entry have been checked.
    finished: bool,
}

impl Entries<BufReader<File>> {
    /// The entries of the index `file`.
    fn of_file(file: File, hash_len: usize) -> Result<Self, Unsupported> {
        let len = file.metadata().map_err(|_| Unsupported)?.len();
        let len = usize::try_from(len).map_err(|_| Unsupported)?;
        Entries::new(BufReader::with_capacity(READ_BUFFER, file), len, hash_len).ok_or(Unsupported)
    }
}

impl<R: BufRead> Entries<R> {
    /// The entries of the index that `reader` reads, `len` bytes in all; `None` unless
    /// its header is one this module reads.
    fn new(reader: R, len: usize, hash_len: usize) -> Option<Self> {
        let mut at = Cursor {
            reader,
            pos: 0,
            len,
            scratch: Vec::new(),
            unconsumed: 0,
        };
        if at.take(4)? != b"DIRC" {
            return None;
        }
        let version = at.u32()?;
        if !(2..=4).contains(&version) {
            return None;
        }
        let remaining = at.u32()? as usize;
        Some(Entries {
            at,
            version,
            hash_len,
            remaining,
            path: Vec::new(),
            stage: 0,
            mode: 0,
            oid: Vec::new(),
            has_current: false,
            previous: Vec::new(),
            previous_stage: 0,
            in_order: true,
            finished: false,
        })
    }

    /// The entry [`Entries::advance`] last stepped to.
    fn current(&self) -> Option<Entry<'_>> {
        self.has_current.then_some(Entry {
            path: &self.path,
            stage: self.stage,
            mode: self.mode,
            oid: &self.oid,
        })
    }

    /// The next entry, `Some(None)` past the last.
    fn next_entry(&mut self) -> Option<Option<Entry<'_>>> {
        Some(if self.advance()? {
            self.current()
        } else {
            None
        })
    }

    /// Steps to the next entry: `Some(true)` onto one, `Some(false)` past the last (the
    /// extensions checked then), `None` where the index is not one this module reads.
    fn advance(&mut self) -> Option<bool> {
        if self.remaining == 0 {
            if !self.finished {
                self.check_extensions()?;
                self.finished = true;
            }
            self.has_current = false;
            return Some(false);
        }
        self.remaining -= 1;
        std::mem::swap(&mut self.path, &mut self.previous);
        self.previous_stage = self.stage;
        let had_previous = self.has_current;
        let start = self.at.pos;
        let stat = self.at.take(STAT_BYTES)?;
        let mode = u32::from_be_bytes(stat[MODE_AT..MODE_AT + 4].try_into().ok()?);
        if mode & MODE_TYPE_MASK == DIRECTORY_MODE {
            return None;
        }
        self.mode = mode;
        let oid = self.at.take(self.hash_len)?;
        self.oid.clear();
        self.oid.extend_from_slice(oid);
        let flags = self.at.u16()?;
        if flags & EXTENDED != 0 {
            if self.version < 3 {
                return None;
            }
            self.at.u16()?;
        }
        self.stage = (flags & STAGE_MASK) >> STAGE_SHIFT;
        self.path.clear();
        if self.version == 4 {
            let strip = self.at.varint()?;
            let keep = self.previous.len().checked_sub(strip)?;
            self.path.extend_from_slice(&self.previous[..keep]);
            self.path.extend_from_slice(self.at.until_nul()?);
        } else {
            self.path.extend_from_slice(self.at.until_nul()?);
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes; one is read.
            let len = self.at.pos - start;
            self.at.take(len.next_multiple_of(8) - len)?;
        }
        if had_previous
            && (self.path.as_slice(), self.stage) <= (self.previous.as_slice(), self.previous_stage)
        {
            self.in_order = false;
        }
        self.has_current = true;
        Some(true)
    }

    /// Reads the extensions, up to the trailing checksum: `None` for one that changes
    /// what the entries mean. A split index keeps most entries in another file (`link`);
    /// a sparse index collapses directories (`sdir`).
    fn check_extensions(&mut self) -> Option<()> {
        while self.at.len.checked_sub(self.at.pos)? > self.hash_len {
            let signature = self.at.take(4)?;
            if signature == b"link" || signature == b"sdir" {
                return None;
            }
            let size = self.at.u32()? as usize;
            self.at.skip(size)?;
        }
        Some(())
    }
}

/// Reads an index front to back, holding only the field being read.
struct Cursor<R> {
    reader: R,
    /// Bytes read so far.
    pos: usize,
    /// Bytes in the index: nothing past them is read, so that a length the file states
    /// never sizes a buffer beyond the file.
    len: usize,
    /// The field last read, where it lay across the end of the reader's buffer.
    scratch: Vec<u8>,
    /// Bytes of the reader's buffer handed out as the field last read, to be consumed
    /// before the next: a field that lies in the buffer is read in place, not copied.
    unconsumed: usize,
}

impl<R: BufRead> Cursor<R> {
    /// Consumes the field last read in place.
    fn settle(&mut self) {
        self.reader.consume(std::mem::take(&mut self.unconsumed));
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.len.checked_sub(self.pos)? {
            return None;
        }
        self.settle();
        self.pos += n;
        if self.reader.fill_buf().ok()?.len() >= n {
            self.unconsumed = n;
            return Some(&self.reader.fill_buf().ok()?[..n]);
        }
        self.scratch.resize(n, 0);
        self.reader.read_exact(&mut self.scratch).ok()?;
        Some(&self.scratch)
    }

    /// Passes over the next `n` bytes (an extension's body), holding none of them.
    fn skip(&mut self, n: usize) -> Option<()> {
        if n > self.len.checked_sub(self.pos)? {
            return None;
        }
        self.settle();
        let skipped = std::io::copy(&mut (&mut self.reader).take(n as u64), &mut std::io::sink());
        if skipped.ok()? != n as u64 {
            return None;
        }
        self.pos += n;
        Some(())
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    /// git's offset varint: 7 bits a byte, high bit set on all but the last, and each
    /// continuation adds one so that no value has two encodings.
    fn varint(&mut self) -> Option<usize> {
        let mut byte = self.take(1)?[0];
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = self.take(1)?[0];
            value = value
                .checked_add(1)?
                .checked_mul(128)?
                .checked_add(usize::from(byte & 0x7f))?;
        }
        Some(value)
    }

    /// The bytes up to the next NUL, which is read and left out.
    fn until_nul(&mut self) -> Option<&[u8]> {
        let rest = self.len.checked_sub(self.pos)?;
        self.settle();
        let buffered = self.reader.fill_buf().ok()?;
        let window = &buffered[..buffered.len().min(rest)];
        if let Some(nul) = window.iter().position(|&b| b == 0) {
            self.unconsumed = nul + 1;
            self.pos += nul + 1;
            return Some(&self.reader.fill_buf().ok()?[..nul]);
        }
        self.scratch.clear();
        let read = (&mut self.reader)
            .take(rest as u64)
            .read_until(0, &mut self.scratch)
            .ok()?;
        if self.scratch.pop() != Some(0) {
            return None;
        }
        self.pos += read;
        Some(&self.scratch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paths of an index held in memory.
    fn parse(data: &[u8], hash_len: usize) -> Option<Vec<Vec<u8>>> {
        let mut entries = Entries::new(data, data.len(), hash_len)?;
        collect_paths(&mut entries, &mut |_| true)
    }

    #[test]
    fn garbage_and_truncation_are_unsupported_never_a_panic() {
        assert!(parse(b"", 20).is_none());
        assert!(parse(b"DIRC\0\0\0\x05\0\0\0\0", 20).is_none());
        let mut header = b"DIRC\0\0\0\x02\0\0\0\x01".to_vec();
        header.extend([0u8; 30]);
        assert!(parse(&header, 20).is_none());
    }

    proptest::proptest! {
        /// Any bytes behind a valid header, with any entry count: a list no longer than
        /// the bytes can hold, or `None`; never a panic or an allocation the count chose.
        #[test]
        fn crafted_indexes_never_panic_nor_over_allocate(
            version in 2u32..=4,
            count in proptest::prelude::any::<u32>(),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        ) {
            let mut data = b"DIRC".to_vec();
            data.extend_from_slice(&version.to_be_bytes());
            data.extend_from_slice(&count.to_be_bytes());
            data.extend_from_slice(&body);
            if let Some(paths) = parse(&data, 20) {
                proptest::prop_assert!(paths.len() <= data.len() / (STAT_BYTES + 20 + 3));
                proptest::prop_assert!(paths.capacity() <= data.len());
            }
        }
    }

    /// One index entry, for [`index_bytes`]: path, stage, mode, object id.
    type TestEntry = (Vec<u8>, u16, u32, [u8; 20]);

    /// An index of `version` holding `entries` (sorted as git sorts them), with a
    /// `TREE` extension and a checksum-sized tail, as git writes one.
    fn index_bytes(version: u32, entries: &[TestEntry]) -> Vec<u8> {
        let mut data = b"DIRC".to_vec();
        data.extend_from_slice(&version.to_be_bytes());
        data.extend_from_slice(&(entries.len() as u32).to_be_bytes());
        let mut previous: &[u8] = &[];
        for (path, stage, mode, oid) in entries {
            let start = data.len();
            let mut stat = [7u8; STAT_BYTES];
            stat[MODE_AT..MODE_AT + 4].copy_from_slice(&mode.to_be_bytes());
            data.extend_from_slice(&stat);
            data.extend_from_slice(oid);
            let flags = (stage << STAGE_SHIFT) | (path.len().min(0xfff) as u16);
            data.extend_from_slice(&flags.to_be_bytes());
            if version == 4 {
                let common = previous
                    .iter()
                    .zip(path)
                    .take_while(|(a, b)| a == b)
                    .count();
                // git's offset varint, as `Cursor::varint` reads it.
                let mut strip = previous.len() - common;
                let mut bytes = vec![(strip & 0x7f) as u8];
                while strip >= 0x80 {
                    strip = (strip >> 7) - 1;
                    bytes.push(0x80 | (strip & 0x7f) as u8);
                }
                bytes.reverse();
                data.extend_from_slice(&bytes);
                data.extend_from_slice(&path[common..]);
                data.push(0);
            } else {
                data.extend_from_slice(path);
                data.push(0);
                let len = data.len() - start;
                data.resize(start + len.next_multiple_of(8), 0);
            }
            previous = path;
        }
        data.extend_from_slice(b"TREE\0\0\0\x02ab");
        data.extend_from_slice(&[0u8; 20]);
        data
    }

    fn changed_between(version: u32, old: &[TestEntry], new: &[TestEntry]) -> Option<Vec<Vec<u8>>> {
        let (old, new) = (index_bytes(version, old), index_bytes(version, new));
        changed_entries(
            Entries::new(old.as_slice(), old.len(), 20)?,
            Entries::new(new.as_slice(), new.len(), 20)?,
            usize::MAX,
        )
    }

    /// Entries drawn from a few paths (some a prefix of another, for version 4), stages,
    /// modes and ids, sorted by path and stage as git keeps them.
    fn entries() -> impl proptest::strategy::Strategy<Value = Vec<TestEntry>> {
        use proptest::prelude::*;
        let paths: &[&[u8]] = &[b"a", b"a.txt", b"a/b", b"a/b/c.log", b"ab", b"b", b"z/y"];
        proptest::collection::btree_map(
            (proptest::sample::select(paths), 0u16..=3),
            (
                proptest::sample::select(&[0o100644u32, 0o100755, 0o120000][..]),
                0u8..3,
            ),
            0..7,
        )
        .prop_map(|map| {
            map.into_iter()
                .map(|((path, stage), (mode, id))| (path.to_vec(), stage, mode, [id; 20]))
                .collect()
        })
    }

    proptest::proptest! {
        /// The side-by-side comparison names exactly the paths whose entries (any stage,
        /// mode or id) differ, in both index versions that name paths differently.
        #[test]
        fn changed_paths_are_the_entries_that_differ(
            version in proptest::sample::select(&[2u32, 4][..]),
            old in entries(),
            new in entries(),
        ) {
            let of = |entries: &[TestEntry]| -> std::collections::BTreeMap<(Vec<u8>, u16), (u32, [u8; 20])> {
                entries.iter().map(|(p, s, m, o)| ((p.clone(), *s), (*m, *o))).collect()
            };
            let (a, b) = (of(&old), of(&new));
            let expected: std::collections::BTreeSet<Vec<u8>> = a
                .keys()
                .chain(b.keys())
                .filter(|key| a.get(*key) != b.get(*key))
                .map(|(path, _)| path.clone())
                .collect();
            let found = changed_between(version, &old, &new);
            proptest::prop_assert_eq!(found, Some(expected.into_iter().collect::<Vec<_>>()));
        }
    }

    #[test]
    fn out_of_order_split_and_over_the_limit_indexes_are_not_compared() {
        let entry = |path: &[u8], id: u8| (path.to_vec(), 0, 0o100644, [id; 20]);
        let sorted = [entry(b"a", 1), entry(b"b", 1)];
        let unsorted = [entry(b"b", 1), entry(b"a", 1)];
        assert_eq!(changed_between(2, &sorted, &sorted), Some(vec![]));
        assert_eq!(changed_between(2, &sorted, &unsorted), None);
        let mut split = index_bytes(2, &sorted);
        let tail = split.len() - 20;
        split.splice(tail..tail, b"link\0\0\0\0".iter().copied());
        let plain = index_bytes(2, &sorted);
        assert!(changed_entries(
            Entries::new(plain.as_slice(), plain.len(), 20).unwrap(),
            Entries::new(split.as_slice(), split.len(), 20).unwrap(),
            10
        )
        .is_none());
        let more = [entry(b"a", 2), entry(b"b", 2)];
        let (old, new) = (index_bytes(2, &sorted), index_bytes(2, &more));
        let compare = |limit| {
            changed_entries(
                Entries::new(old.as_slice(), old.len(), 20).unwrap(),
                Entries::new(new.as_slice(), new.len(), 20).unwrap(),
                limit,
            )
        };
        assert_eq!(compare(2), Some(vec![b"a".to_vec(), b"b".to_vec()]));
        assert_eq!(compare(1), None);
    }

    #[test]
    fn varint_matches_git() {
        // git encodes 128 as 0x80 0x00 and 16511 as 0xff 0x7f.
        let data: &[u8] = &[0x80, 0x00, 0xff, 0x7f, 0x05];
        let mut c = Cursor {
            reader: data,
            pos: 0,
            len: data.len(),
            scratch: Vec::new(),
            unconsumed: 0,
        };
        assert_eq!(c.varint(), Some(128));
        assert_eq!(c.varint(), Some(16511));
        assert_eq!(c.varint(), Some(5));
    }
}
