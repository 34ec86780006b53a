//! How the worktree's filesystem compares names: whether it takes `README` and `readme`
//! for one name (it ignores case: APFS and HFS+ by default, NTFS and FAT, ext4 with
//! `casefold`), and whether it takes `é` as one code point (NFC) and as `e` with a
//! combining accent (NFD) for one name (it ignores Unicode normalization: APFS, HFS+,
//! which also hands every name back in NFD, ext4 with `casefold`).
//!
//! git asks once, when a repository is made (`core.ignorecase`,
//! `core.precomposeUnicode`). This module asks the filesystem the same way: it creates
//! a file with a name of mixed case and an NFC accent and looks it up by the other
//! forms, in the store's directory where that lies on the worktree's filesystem, else in
//! the worktree's top (the git dir may lie on another filesystem, where git's own answer
//! is of no use). The answer is kept in `<git-dir>/checkpoint/names`, with the
//! worktree's path, device and inode, so a moved worktree is asked again. git's own
//! settings, where set, decide instead.
//!
//! What follows from the answer (docs/design.md invariant 28): a restore or revert whose
//! result would hold two names such a filesystem takes for one refuses before changing
//! anything (`ops::restore`'s collision check), and where normalization is ignored the
//! walk takes each name it reads from a directory in NFC ([`precompose`]), as git does
//! with `core.precomposeUnicode`, so that a name written in NFC and handed back in NFD
//! is the same file to `status`, `diff` and a save.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use crate::git::repo::Repo;
use crate::worktree::exempt::WATCH_COOKIE_PREFIX;
use crate::worktree::platform;

/// Which differences between two names the worktree's filesystem ignores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameRules {
    /// `README` and `readme` name one file.
    pub ignores_case: bool,
    /// A name in NFC and the same name in NFD name one file.
    pub ignores_normalization: bool,
}

/// The file under `<git-dir>/checkpoint/` that keeps the probe's answer.
const CACHE_FILE: &str = "names";

/// The test hook that stands for the probe's answer ([`forced_by_test`]).
const TEST_HOOK: &str = "GIT_CHECKPOINT_NAMES_PROBE";

impl NameRules {
    /// Every byte counts: two names are one only when they are equal (Linux's own
    /// filesystems, unless told otherwise).
    pub const EXACT: NameRules = NameRules {
        ignores_case: false,
        ignores_normalization: false,
    };

    /// What a filesystem that cannot be asked is taken to ignore: what the system's own
    /// filesystems do by default.
    const SYSTEM_DEFAULT: NameRules = NameRules {
        ignores_case: platform::NAMES_IGNORE_CASE_AND_NORMALIZATION_BY_DEFAULT,
        ignores_normalization: platform::NAMES_IGNORE_CASE_AND_NORMALIZATION_BY_DEFAULT,
    };

    /// The rules of `repo`'s worktree: `core.ignorecase` where git's configuration sets
    /// it, and `core.precomposeUnicode` on Apple systems, where git reads it (elsewhere
    /// git ignores it, and so does this: a setting shared with a Mac must not make a
    /// Linux walk rename files); anything not set is the probe's answer, kept per
    /// worktree location.
    pub fn of(repo: &Repo) -> NameRules {
        let probed = || forced_by_test().unwrap_or_else(|| cached_or_probed(repo));
        let case = repo.config_bool("core.ignorecase");
        let normalization = repo
            .config_bool("core.precomposeunicode")
            .filter(|_| platform::GIT_READS_PRECOMPOSE_UNICODE);
        match (case, normalization) {
            (Some(ignores_case), Some(ignores_normalization)) => NameRules {
                ignores_case,
                ignores_normalization,
            },
            (case, normalization) => {
                let probed = probed();
                NameRules {
                    ignores_case: case.unwrap_or(probed.ignores_case),
                    ignores_normalization: normalization.unwrap_or(probed.ignores_normalization),
                }
            }
        }
    }

    /// `name` (one path component) as this filesystem compares it: two names are one
    /// file exactly when their keys are equal. In NFC where normalization is ignored,
    /// lower case (Unicode's) where case is; a name that is not UTF-8 has only its ASCII
    /// letters folded.
    pub fn key<'a>(&self, name: &'a [u8]) -> Cow<'a, [u8]> {
        let name = match self.ignores_normalization {
            true => precompose(name),
            false => Cow::Borrowed(name),
        };
        if !self.ignores_case || !name.iter().any(|b| b.is_ascii_uppercase() || *b >= 0x80) {
            return name;
        }
        match std::str::from_utf8(&name) {
            Ok(text) => {
                let lower = text.to_lowercase();
                Cow::Owned(match self.ignores_normalization {
                    true => lower.nfc().collect::<String>().into_bytes(),
                    false => lower.into_bytes(),
                })
            }
            Err(_) => Cow::Owned(name.to_ascii_lowercase()),
        }
    }

    /// What makes two names one here, for a message: "case", "Unicode normalization".
    pub fn what_is_ignored(&self) -> &'static str {
        match (self.ignores_case, self.ignores_normalization) {
            (true, true) => "case and Unicode normalization",
            (true, false) => "case",
            (false, true) => "Unicode normalization",
            (false, false) => "nothing",
        }
    }
}

/// `name` (one path component, as a directory listing gives it) in NFC, as git's
/// `core.precomposeUnicode` takes names: a name that is not UTF-8, or already NFC (every
/// ASCII name), is kept as it is, without a copy.
pub fn precompose(name: &[u8]) -> Cow<'_, [u8]> {
    if name.is_ascii() {
        return Cow::Borrowed(name);
    }
    let Ok(text) = std::str::from_utf8(name) else {
        return Cow::Borrowed(name);
    };
    if is_nfc_quick(text.chars()) == IsNormalized::Yes {
        return Cow::Borrowed(name);
    }
    let composed: String = text.nfc().collect();
    match composed.as_bytes() == name {
        true => Cow::Borrowed(name),
        false => Cow::Owned(composed.into_bytes()),
    }
}

/// The answer `GIT_CHECKPOINT_NAMES_PROBE` stands for, in builds with the `test-hooks`
/// feature only: `exact`, `case`, `normalization`, or `case,normalization`. It lets the
/// tests give a worktree on Linux's own filesystems the rules of a Mac's (the probe's
/// seam); git's settings still decide over it, as over the probe.
fn forced_by_test() -> Option<NameRules> {
    if !cfg!(feature = "test-hooks") {
        return None;
    }
    let value = std::env::var(TEST_HOOK).ok()?;
    let mut rules = NameRules::EXACT;
    for part in value.split(',') {
        match part.trim() {
            "case" => rules.ignores_case = true,
            "normalization" => rules.ignores_normalization = true,
            _ => {}
        }
    }
    Some(rules)
}

/// The probe's answer for `repo`'s worktree: the one kept in `<git-dir>/checkpoint/names`
/// when it was given for this worktree at this place (its path, device and inode), else
/// asked now and kept, where the store's directory exists. The probe runs in the store's
/// directory where that lies on the worktree's filesystem (as git's runs in the git
/// dir; ext4 gives a directory made inside a case-folding one the same rule), so that
/// the worktree's top keeps its times and the directory cache its listing; otherwise in
/// the top. A probe that cannot run (a directory this user may not write) answers what
/// the system's filesystems do by default, and is asked again next time.
fn cached_or_probed(repo: &Repo) -> NameRules {
    let Ok(top) = std::fs::metadata(&repo.root) else {
        return NameRules::SYSTEM_DEFAULT;
    };
    let key = cache_key(&repo.root, &top);
    let store_dir = repo.checkpoint_dir();
    let cache = store_dir.join(CACHE_FILE);
    if let Some(rules) = std::fs::read(&cache)
        .ok()
        .and_then(|kept| parse_cache(&kept, &key))
    {
        return rules;
    }
    let store_dir_meta = std::fs::metadata(&store_dir).ok().filter(|m| m.is_dir());
    let beside_the_top = store_dir_meta
        .as_ref()
        .is_some_and(|m| m.dev() == top.dev());
    let asked = match beside_the_top {
        true => probe(&store_dir),
        false => probe(&repo.root),
    };
    match asked {
        Ok(rules) => {
            if store_dir_meta.is_some() {
                // A cache that cannot be written is asked again next time; no error.
                let _ = write_cache(&cache, &key, rules);
            }
            rules
        }
        Err(_) => NameRules::SYSTEM_DEFAULT,
    }
}

/// What the kept answer must have been given for: the worktree's top as a path, a
/// device and an inode.
fn cache_key(root: &Path, top: &std::fs::Metadata) -> Vec<u8> {
    let mut key = format!("{} {} ", top.dev(), top.ino()).into_bytes();
    key.extend_from_slice(root.as_os_str().as_bytes());
    key
}

/// The rules a cache file `kept` holds, if it was written for `key`. Its form: `1`, the
/// two answers as `0`/`1`, then the key (`<dev> <ino> <path>`), separated by spaces.
fn parse_cache(kept: &[u8], key: &[u8]) -> Option<NameRules> {
    let rest = kept.strip_prefix(b"1 ")?;
    let (case, rest) = (rest.first()?, rest.get(1..)?);
    let rest = rest.strip_prefix(b" ")?;
    let (normalization, rest) = (rest.first()?, rest.get(1..)?);
    if rest.strip_prefix(b" ")? != key {
        return None;
    }
    let answer = |b: &u8| match b {
        b'0' => Some(false),
        b'1' => Some(true),
        _ => None,
    };
    Some(NameRules {
        ignores_case: answer(case)?,
        ignores_normalization: answer(normalization)?,
    })
}

/// Keeps `rules` for `key` in `path`, written whole under another name first.
fn write_cache(path: &Path, key: &[u8], rules: NameRules) -> std::io::Result<()> {
    let mut kept = format!(
        "1 {} {} ",
        u8::from(rules.ignores_case),
        u8::from(rules.ignores_normalization)
    )
    .into_bytes();
    kept.extend_from_slice(key);
    let fresh = path.with_extension(format!("new-{}", std::process::id()));
    std::fs::write(&fresh, &kept)?;
    std::fs::rename(&fresh, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&fresh);
    })
}

/// Asks the filesystem of the directory `dir`: creates an empty file whose name has
/// letters of both cases and an `é` in NFC, looks it up with the case of every ASCII
/// letter swapped and with the `é` in NFD, and removes it. A filesystem that refuses
/// the accent (some FAT drivers) is asked about case alone: no name it holds can differ
/// in normalization. The name begins as a watcher's cookie does, so that no walk, save
/// or restore running meanwhile takes it for the user's (invariant 16).
pub fn probe(dir: &Path) -> std::io::Result<NameRules> {
    let stem = format!(
        "{WATCH_COOKIE_PREFIX}names-{}-{:08x}-Probe-",
        std::process::id(),
        rand::random::<u32>()
    );
    let (created, accented) = match create_new(&dir.join(format!("{stem}\u{e9}"))) {
        Ok(()) => (format!("{stem}\u{e9}"), true),
        Err(e) if matches!(e.kind(), ErrorKind::AlreadyExists) => return Err(e),
        Err(_) => {
            create_new(&dir.join(format!("{stem}x")))?;
            (format!("{stem}x"), false)
        }
    };
    let path = dir.join(&created);
    let answer = (|| {
        let file = std::fs::symlink_metadata(&path)?;
        let same_file = |name: &str| {
            std::fs::symlink_metadata(dir.join(OsStr::new(name)))
                .is_ok_and(|other| other.dev() == file.dev() && other.ino() == file.ino())
        };
        let swapped: String = created
            .chars()
            .map(|c| match c {
                'a'..='z' => c.to_ascii_uppercase(),
                'A'..='Z' => c.to_ascii_lowercase(),
                c => c,
            })
            .collect();
        Ok(NameRules {
            ignores_case: same_file(&swapped),
            ignores_normalization: accented && same_file(&format!("{stem}e\u{301}")),
        })
    })();
    let _ = std::fs::remove_file(&path);
    answer
}

/// Creates an empty file at `path`, never over anything, never through a symlink.
fn create_new(path: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precompose_turns_nfd_into_nfc_and_leaves_everything_else_alone() {
        let nfd = "cafe\u{301}".as_bytes();
        assert_eq!(precompose(nfd).as_ref(), "caf\u{e9}".as_bytes());
        for kept in [&b"plain.txt"[..], "caf\u{e9}".as_bytes(), b"\xff\xfe"] {
            assert!(matches!(precompose(kept), Cow::Borrowed(_)), "{kept:?}");
        }
    }

    #[test]
    fn keys_fold_only_what_the_filesystem_ignores() {
        let (nfc, nfd) = ("Caf\u{e9}".as_bytes(), "Cafe\u{301}".as_bytes());
        let case = NameRules {
            ignores_case: true,
            ignores_normalization: false,
        };
        let normalization = NameRules {
            ignores_case: false,
            ignores_normalization: true,
        };
        let both = NameRules {
            ignores_case: true,
            ignores_normalization: true,
        };
        assert_ne!(
            NameRules::EXACT.key(b"README"),
            NameRules::EXACT.key(b"readme")
        );
        assert_eq!(case.key(b"README"), case.key(b"readme"));
        assert_ne!(case.key(nfc), case.key(nfd));
        assert_eq!(normalization.key(nfc), normalization.key(nfd));
        assert_ne!(normalization.key(b"README"), normalization.key(b"readme"));
        assert_eq!(both.key(nfc), both.key("CAFE\u{301}".as_bytes()));
        assert_eq!(
            case.key("\u{c9}T\u{c9}".as_bytes()),
            case.key("\u{e9}t\u{e9}".as_bytes())
        );
        // Not UTF-8: the ASCII letters only.
        assert_eq!(case.key(b"A\xff"), case.key(b"a\xff"));
    }

    #[test]
    fn the_probe_finds_linux_s_own_filesystems_exact_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(probe(dir.path()).unwrap(), NameRules::EXACT);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_kept_answer_counts_only_for_the_worktree_it_was_given_for() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("names");
        let rules = NameRules {
            ignores_case: true,
            ignores_normalization: false,
        };
        write_cache(&cache, b"1 2 /work/tree", rules).unwrap();
        let kept = std::fs::read(&cache).unwrap();
        assert_eq!(parse_cache(&kept, b"1 2 /work/tree"), Some(rules));
        assert_eq!(parse_cache(&kept, b"1 2 /moved/tree"), None);
        assert_eq!(parse_cache(&kept, b"1 3 /work/tree"), None);
        assert_eq!(parse_cache(b"garbage", b"1 2 /work/tree"), None);
    }
}
