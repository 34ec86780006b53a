//! Where HEAD points, read from the files backend in-process: the `HEAD` file, a loose
//! branch ref, `packed-refs`. `None` answers leave the question to git: the reftable
//! backend, a branch that is itself a symbolic ref, a packed ref that needs peeling,
//! anything not in the form git writes.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What the `HEAD` file holds.
enum Head {
    /// A symbolic ref to this full ref name.
    Symbolic(Vec<u8>),
    /// A detached HEAD at this object id.
    Detached(Vec<u8>),
}

fn read_head(git_dir: &Path, common_dir: &Path) -> Option<Head> {
    let path = git_dir.join("HEAD");
    // An old-style symbolic-link HEAD, and the reftable backend, are left to git.
    if !std::fs::symlink_metadata(&path).ok()?.is_file() || common_dir.join("reftable").exists() {
        return None;
    }
    let text = std::fs::read(&path).ok()?;
    let text = text.trim_ascii_end();
    match text.strip_prefix(b"ref:") {
        Some(target) => Some(Head::Symbolic(target.trim_ascii_start().to_vec())),
        None => Some(Head::Detached(text.to_vec())),
    }
}

/// What a ref resolves to in the files backend.
enum Resolved {
    /// This object id.
    Id(Vec<u8>),
    /// No such ref (an unborn branch).
    Missing,
}

/// A branch's value: its loose file in the common directory, else its `packed-refs`
/// line. `None` for a symbolic ref, a packed ref with a peeled line (it names a tag,
/// which git peels), or a form this reader does not know.
fn resolve(common_dir: &Path, name: &[u8], hex_len: usize) -> Option<Resolved> {
    if !name.starts_with(b"refs/heads/")
        || name
            .split(|&b| b == b'/')
            .any(|c| c == b".." || c.is_empty())
    {
        return None;
    }
    match std::fs::read(common_dir.join(OsStr::from_bytes(name))) {
        Ok(text) => return object_id(text.trim_ascii_end(), hex_len).map(Resolved::Id),
        // A directory where the ref would be (`refs/heads/a` when `a/b` exists) is no
        // loose ref either.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::NotADirectory
                    | std::io::ErrorKind::IsADirectory
            ) => {}
        Err(_) => return None,
    }
    let packed = match std::fs::read(common_dir.join("packed-refs")) {
        Ok(packed) => packed,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Resolved::Missing),
        Err(_) => return None,
    };
    let mut lines = packed.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        if line.starts_with(b"#") || line.starts_with(b"^") || line.is_empty() {
            continue;
        }
        let (id, ref_name) = line.split_at_checked(hex_len)?;
        if ref_name.strip_prefix(b" ") != Some(name) {
            continue;
        }
        if lines.peek().is_some_and(|next| next.starts_with(b"^")) {
            return None;
        }
        return object_id(id, hex_len).map(Resolved::Id);
    }
    Some(Resolved::Missing)
}

/// `text` as a lower-case object id of `hex_len` digits, if it is one.
fn object_id(text: &[u8], hex_len: usize) -> Option<Vec<u8>> {
    (text.len() == hex_len && text.iter().all(u8::is_ascii_hexdigit))
        .then(|| text.to_ascii_lowercase())
}

/// The commit `HEAD` resolves to (`Some(None)` on an unborn branch), as
/// `git rev-parse HEAD^{commit}` would print it. A branch is taken to name a commit, as
/// every git command that moves one makes it.
pub(crate) fn head_commit(
    git_dir: &Path,
    common_dir: &Path,
    hex_len: usize,
) -> Option<Option<String>> {
    let id = match read_head(git_dir, common_dir)? {
        Head::Detached(id) => object_id(&id, hex_len)?,
        Head::Symbolic(target) => match resolve(common_dir, &target, hex_len)? {
            Resolved::Id(id) => id,
            Resolved::Missing => return Some(None),
        },
    };
    Some(Some(String::from_utf8(id).ok()?))
}

/// The branch `HEAD` names (without `refs/heads/`), `Some(None)` when it names none,
/// as git's `onbranch:` include condition sees it.
pub(crate) fn head_branch(git_dir: &Path, common_dir: &Path) -> Option<Option<Vec<u8>>> {
    match read_head(git_dir, common_dir)? {
        Head::Symbolic(target) => match target.strip_prefix(b"refs/heads/") {
            Some(branch) => {
                // A branch that is a symbolic ref itself resolves further: git knows how.
                match std::fs::read(common_dir.join(OsStr::from_bytes(&target))) {
                    Ok(text) if text.starts_with(b"ref:") => None,
                    _ => Some(Some(branch.to_vec())),
                }
            }
            None => Some(None),
        },
        Head::Detached(_) => Some(None),
    }
}
