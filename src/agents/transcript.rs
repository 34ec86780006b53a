//! The transcript a hook payload names, opened only if it is one: a regular file inside
//! the agent's own transcript directories (each agent's module says where those are).
//! A payload's `transcript_path` is only what the payload says: taken as it is, it would
//! attach (and a push would publish) any file the user can read — a private key,
//! `/etc/shadow`, `/proc/self/environ` — or block on a FIFO.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// A transcript, open.
#[derive(Debug)]
pub(super) struct Transcript {
    /// The file, opened once: what was checked is what is read.
    pub file: File,
    /// Its length when it was opened.
    pub len: u64,
    /// Its file name, which it is attached under.
    pub name: String,
}

/// Opens the transcript `named` if it is a regular file below one of `dirs` with every
/// symlink resolved (a link in a transcript directory leading out of it does not count).
pub(super) fn open(dirs: &[PathBuf], named: &Path) -> Result<Transcript> {
    let refuse = |why: String| Error::UnsafeFile {
        path: named.to_path_buf(),
        why,
    };
    let real = std::fs::canonicalize(named).map_err(|e| Error::io(named, e))?;
    let inside = dirs
        .iter()
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .any(|dir| real.starts_with(&dir) && real != dir);
    if !inside {
        let places: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return Err(refuse(match places.is_empty() {
            true => "this agent keeps no transcript git-checkpoint knows of".into(),
            false => format!(
                "a transcript must be a file in the agent's transcript directory ({})",
                places.join(", ")
            ),
        }));
    }
    // The resolved path has no symlink left; O_NOFOLLOW refuses one swapped in since, and
    // O_NONBLOCK keeps a FIFO from blocking the open.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&real)
        .map_err(|e| Error::io(&real, e))?;
    let meta = file.metadata().map_err(|e| Error::io(&real, e))?;
    if !meta.is_file() {
        return Err(refuse("a transcript must be a regular file".into()));
    }
    let name = real
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| refuse("it names no file".into()))?;
    Ok(Transcript {
        file,
        len: meta.len(),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_below_a_transcript_directory_open() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("projects");
        std::fs::create_dir_all(dir.join("p")).unwrap();
        std::fs::write(dir.join("p/s.jsonl"), b"{}\n").unwrap();
        std::fs::write(tmp.path().join("secret"), b"key\n").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), dir.join("p/link.jsonl")).unwrap();
        let dirs = [dir.clone()];
        let opened = open(&dirs, &dir.join("p/s.jsonl")).unwrap();
        assert_eq!((opened.len, opened.name.as_str()), (3, "s.jsonl"));
        for refused in [
            tmp.path().join("secret"),
            dir.join("p/link.jsonl"),
            dir.join("p"),
            dir.join("p/../../secret"),
        ] {
            assert!(open(&dirs, &refused).is_err(), "{}", refused.display());
        }
        assert!(open(&[], &dir.join("p/s.jsonl")).is_err());
    }
}
