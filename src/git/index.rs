//! The paths in git's index, read straight from `$GIT_DIR/index`.
//!
//! A save needs the tracked paths to find files that an ignore rule matches although git
//! tracks them. Asking `git ls-files` costs a process and a full parse on a 2-core
//! machine, while the walk wants both cores; the index's path list is simple to read.
//! Only what this module knows for certain is read: index versions 2 to 4 without a
//! split or sparse index. Anything else is [`Unsupported`], and the caller asks git.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The index holds something this reader does not handle; ask git instead.
#[derive(Debug)]
pub struct Unsupported;

/// Bytes of the fixed part of an entry before the hash: ctime, mtime, dev, ino, mode,
/// uid, gid, size (4 bytes each but the two times, which are 8).
const STAT_BYTES: usize = 40;
/// Entry flag: an extended flags word follows (version 3 and later).
const EXTENDED: u16 = 0x4000;
/// The entry's mode is a directory: a sparse index's collapsed directory.
const DIRECTORY_MODE: u32 = 0o040000;
const MODE_TYPE_MASK: u32 = 0o170000;

/// The paths the index at `path` holds, in index order (sorted by bytes), with a conflict's
/// stages listed once each. A missing index holds nothing. `hash_len` is the object
/// name length: 20 for SHA-1 repositories, 32 for SHA-256. The file is read as it is
/// parsed, never whole: at a million files it is some 90 MB, which a save would hold
/// beside the paths (docs/design.md, "Save", memory).
pub fn tracked_paths(path: &Path, hash_len: usize) -> Result<Vec<Vec<u8>>, Unsupported> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(_) => return Err(Unsupported),
    };
    let len = file.metadata().map_err(|_| Unsupported)?.len();
    let len = usize::try_from(len).map_err(|_| Unsupported)?;
    parse_from(BufReader::with_capacity(64 << 10, file), len, hash_len).ok_or(Unsupported)
}

/// [`parse_from`] of an index held in memory.
#[cfg(test)]
fn parse(data: &[u8], hash_len: usize) -> Option<Vec<Vec<u8>>> {
    parse_from(data, data.len(), hash_len)
}

/// The paths of the index that `reader` reads, `len` bytes in all.
fn parse_from(reader: impl BufRead, len: usize, hash_len: usize) -> Option<Vec<Vec<u8>>> {
    let mut at = Cursor {
        reader,
        pos: 0,
        len,
        scratch: Vec::new(),
    };
    if at.take(4)? != b"DIRC" {
        return None;
    }
    let version = at.u32()?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = at.u32()? as usize;
    // The count is the file's word: reserve no more entries than its bytes can hold.
    let smallest_entry = STAT_BYTES + hash_len + 2 + 1;
    let mut paths: Vec<Vec<u8>> = Vec::with_capacity(count.min(len / smallest_entry));
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at.pos;
        let stat = at.take(STAT_BYTES)?;
        let mode = u32::from_be_bytes(stat[24..28].try_into().ok()?);
        if mode & MODE_TYPE_MASK == DIRECTORY_MODE {
            return None;
        }
        at.take(hash_len)?;
        let flags = at.u16()?;
        if flags & EXTENDED != 0 {
            if version < 3 {
                return None;
            }
            at.u16()?;
        }
        let path = if version == 4 {
            let strip = at.varint()?;
            let keep = previous.len().checked_sub(strip)?;
            let suffix = at.until_nul()?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(suffix);
            path
        } else {
            let name = at.until_nul()?.to_vec();
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes; one is read.
            let len = at.pos - start;
            at.take(len.next_multiple_of(8) - len)?;
            name
        };
        if paths.last() != Some(&path) {
            paths.push(path.clone());
        }
        previous = path;
    }
    // Extensions, up to the trailing checksum. A split index keeps most entries in
    // another file (`link`); a sparse index collapses directories (`sdir`).
    while len.checked_sub(at.pos)? > hash_len {
        let signature = at.take(4)?;
        if signature == b"link" || signature == b"sdir" {
            return None;
        }
        let size = at.u32()? as usize;
        at.skip(size)?;
    }
    Some(paths)
}

/// Reads an index front to back, holding only the field being read.
struct Cursor<R> {
    reader: R,
    /// Bytes read so far.
    pos: usize,
    /// Bytes in the index: nothing past them is read, so that a length the file states
    /// never sizes a buffer beyond the file.
    len: usize,
    /// The field last read.
    scratch: Vec<u8>,
}

impl<R: BufRead> Cursor<R> {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.len.checked_sub(self.pos)? {
            return None;
        }
        self.scratch.resize(n, 0);
        self.reader.read_exact(&mut self.scratch).ok()?;
        self.pos += n;
        Some(&self.scratch)
    }

    /// Passes over the next `n` bytes (an extension's body), holding none of them.
    fn skip(&mut self, n: usize) -> Option<()> {
        if n > self.len.checked_sub(self.pos)? {
            return None;
        }
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

    #[test]
    fn varint_matches_git() {
        // git encodes 128 as 0x80 0x00 and 16511 as 0xff 0x7f.
        let data: &[u8] = &[0x80, 0x00, 0xff, 0x7f, 0x05];
        let mut c = Cursor {
            reader: data,
            pos: 0,
            len: data.len(),
            scratch: Vec::new(),
        };
        assert_eq!(c.varint(), Some(128));
        assert_eq!(c.varint(), Some(16511));
        assert_eq!(c.varint(), Some(5));
    }
}
