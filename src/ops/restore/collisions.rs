//! Names a worktree's filesystem takes for one (docs/design.md invariant 28): on a
//! filesystem that ignores case, `README` and `readme` are one file, and where it ignores
//! Unicode normalization, so are `é` in NFC and in NFD. A change that writes one such
//! name beside another would write one file over the other, or put two directories'
//! files into one; so restore and revert refuse it in their preflights, before anything
//! changes, naming both paths.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::preflight::holds_nothing_else;
use crate::diff::Change;
use crate::format::path::join;
use crate::worktree::names::NameRules;
use crate::{Error, Result};

/// Refuses `changes` when, under `rules`, a name they write would be one name with
/// another in the same directory: another name they write (the checkpoint holds both,
/// as `README` and `readme`, or `Docs/a` and `docs/b`), or a name the worktree has there
/// and keeps (one it does not delete, or a directory that still holds something once the
/// deletions are done). Each directory written into is listed once. Nothing is looked at
/// where the filesystem compares names byte for byte.
pub(crate) fn check_no_collisions(root: &Path, rules: NameRules, changes: &[Change]) -> Result<()> {
    if rules == NameRules::EXACT {
        return Ok(());
    }
    let deleted: HashSet<&[u8]> = changes
        .iter()
        .filter(|c| c.new.is_none())
        .map(|c| c.path.as_slice())
        .collect();
    // Per directory written into: each key written there, and the name that gave it.
    let mut written: HashMap<&[u8], HashMap<Vec<u8>, &[u8]>> = HashMap::new();
    for change in changes.iter().filter(|c| c.new.is_some()) {
        let path = change.path.as_slice();
        let mut start: usize = 0;
        for end in path
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'/')
            .map(|(i, _)| i)
            .chain([path.len()])
        {
            let (dir, name) = (&path[..start.saturating_sub(1)], &path[start..end]);
            let key = rules.key(name);
            let keys = written.entry(dir).or_default();
            match keys.get(key.as_ref()) {
                Some(other) if *other != name => {
                    return Err(collision(
                        root,
                        rules,
                        dir,
                        name,
                        other,
                        "is to be written too",
                    ))
                }
                Some(_) => {}
                None => {
                    keys.insert(key.into_owned(), name);
                }
            }
            start = end + 1;
        }
    }
    for (dir, keys) in &written {
        let full = root.join(OsStr::from_bytes(dir));
        // A directory still to be made holds nothing yet; one that cannot be listed is
        // left to the checks that open it.
        let Ok(entries) = std::fs::read_dir(&full) else {
            continue;
        };
        for entry in entries.flatten() {
            let on_disk = entry.file_name();
            let on_disk = on_disk.as_bytes();
            let Some(name) = keys.get(rules.key(on_disk).as_ref()) else {
                continue;
            };
            // The same name (in NFC where the filesystem hands names back otherwise).
            if rules.ignores_normalization && crate::worktree::names::precompose(on_disk) == *name
                || on_disk == *name
            {
                continue;
            }
            let there = join(dir, on_disk);
            if deleted.contains(there.as_slice()) {
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && holds_nothing_else(root, &entry.path(), &deleted).is_ok() {
                continue;
            }
            return Err(collision(
                root,
                rules,
                dir,
                name,
                on_disk,
                "stays in the worktree",
            ));
        }
    }
    Ok(())
}

/// The refusal of writing `name` in `dir` where `other` (which `what` says more of)
/// would be the same file.
fn collision(
    root: &Path,
    rules: NameRules,
    dir: &[u8],
    name: &[u8],
    other: &[u8],
    what: &str,
) -> Error {
    let other = root.join(OsStr::from_bytes(&join(dir, other)));
    Error::RestoreBlocked {
        path: root.join(OsStr::from_bytes(&join(dir, name))),
        why: format!(
            "{} {what}, and this worktree's filesystem takes the two names for one (it ignores {}); rename one where names can differ, or leave one out (name the paths to restore)",
            other.display(),
            rules.what_is_ignored()
        ),
    }
}
