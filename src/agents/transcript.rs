//! The transcript a hook payload names, opened only if it is one: a regular file inside
//! the agent's own transcript directories (each agent's module says where those are).
//! A payload's `transcript_path` is only what the payload says: taken as it is, it would
//! attach (and a push would publish) any file the user can read — a private key,
//! `/etc/shadow`, `/proc/self/environ` — or block on a FIFO. A transcript the agent has
//! not written yet (Claude Code writes it only after the first prompt's hook) is one of
//! 0 bytes, when it would be the agent's own.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::paths::resolved;
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
/// `None` when there is no file there yet but one made there would be inside: a
/// transcript the agent has not started, 0 bytes of conversation.
pub(super) fn open(dirs: &[PathBuf], named: &Path) -> Result<Option<Transcript>> {
    let refuse = |why: String| Error::UnsafeFile {
        path: named.to_path_buf(),
        why,
    };
    let (real, exists) = match std::fs::canonicalize(named) {
        Ok(real) => (real, true),
        // Where it would be: its deepest existing folder with every link resolved, and
        // the rest as named, which must then not climb out again.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let climbs = named
                .components()
                .any(|part| part == std::path::Component::ParentDir);
            match climbs {
                true => {
                    return Err(refuse(
                        "a transcript's path must not climb with '..'".into(),
                    ))
                }
                false => (resolved(named), false),
            }
        }
        Err(e) => return Err(Error::io(named, e)),
    };
    // A transcript directory the agent has not made yet is where it would be.
    let inside = dirs
        .iter()
        .map(|dir| resolved(dir))
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
    if !exists {
        return Ok(None);
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
    Ok(Some(Transcript {
        file,
        len: meta.len(),
        name,
    }))
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
        let opened = open(&dirs, &dir.join("p/s.jsonl")).unwrap().unwrap();
        assert_eq!((opened.len, opened.name.as_str()), (3, "s.jsonl"));
        assert!(open(&dirs, &dir.join("q/not-yet.jsonl")).unwrap().is_none());
        for refused in [
            tmp.path().join("secret"),
            dir.join("p/link.jsonl"),
            dir.join("p"),
            dir.join("p/../../secret"),
        ] {
            assert!(open(&dirs, &refused).is_err(), "{}", refused.display());
        }
        assert!(open(&[], &dir.join("p/s.jsonl")).is_err());
        for refused in [
            tmp.path().join("not-yet.jsonl"),
            dir.join("q/../../not-yet.jsonl"),
            dir.join("p/link.jsonl/../../../not-yet.jsonl"),
        ] {
            assert!(open(&dirs, &refused).is_err(), "{}", refused.display());
        }
    }
}
