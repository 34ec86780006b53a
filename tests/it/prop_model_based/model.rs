//! The model: what git itself says a checkpoint holds, and what a restore should leave.

use super::*;

/// A path or text for a bash command line (`$'…'` with escapes where needed).
pub(super) fn sh(bytes: &[u8]) -> String {
    let plain = !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"./_-@:".contains(b));
    if plain {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut s = String::from("$'");
    for &b in bytes {
        match b {
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('\'');
    s
}

/// A `printf` format that prints exactly `bytes` (NUL bytes included).
pub(super) fn printf_of(bytes: &[u8]) -> String {
    let mut s = String::from("printf '");
    for &b in bytes {
        match b {
            b'\'' => s.push_str("'\\''"),
            b'\\' => s.push_str("\\\\"),
            b'%' => s.push_str("%%"),
            b'\n' => s.push_str("\\n"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\{b:03o}");
            }
        }
    }
    s.push('\'');
    s
}

/// The path `PATHS[path]` or, with `dir`, its directory when it has one;
/// [`MISSING_PATH`] for `usize::MAX`.
pub(super) fn pick_path(path: usize, dir: bool) -> Vec<u8> {
    if path == usize::MAX {
        return MISSING_PATH.to_vec();
    }
    let p = PATHS[path % PATHS.len()];
    if dir {
        if let Some(slash) = p.iter().rposition(|&b| b == b'/') {
            return p[..slash].to_vec();
        }
    }
    p.to_vec()
}

pub(super) fn content_of(variant: u8) -> Vec<u8> {
    format!("v{variant}\n").into_bytes()
}

/// A checkpoint of the model: exactly what `git add -A` saw, and the files too large.
#[derive(Clone, Debug)]
pub(super) struct Cp {
    pub(super) id: String,
    pub(super) tree: Snap,
    pub(super) skipped: BTreeSet<Vec<u8>>,
    pub(super) parent: Option<String>,
    /// The agent hook that saved it, if one did.
    pub(super) hook: Option<Hook>,
    /// Who wrote which of [`SESSION_PATHS`] since the checkpoint before it on its line
    /// (oldest first): the truth `restore --only-session` may never contradict.
    pub(super) writes: Vec<(Vec<u8>, Writer)>,
}

/// An agent hook's checkpoint: the session (an index into [`SESSIONS`]), the step, and
/// the number of the prompt it belongs to (what the hook records as `prompt`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Hook {
    pub(super) session: usize,
    pub(super) step: HookStep,
    pub(super) prompt: u64,
}

/// The step a hook's checkpoint stands for.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum HookStep {
    /// A prompt, numbered as the session numbers them.
    Prompt { number: u64 },
    /// Just before tool call `call` (a `PreToolUse` hooked by hand).
    BeforeTool { call: String },
    /// After tool call `call`, which named the file `named`, if any.
    Tool {
        call: String,
        named: Option<Vec<u8>>,
    },
}

/// Who wrote a session path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Writer {
    /// The user, or anything that is not an agent's tool call (a restore, a revert).
    User,
    /// A tool call of the session with this index.
    Agent(usize),
}

/// What the store should hold: checkpoints in the order they were made, branches, HEAD.
#[derive(Default)]
pub(super) struct Model {
    pub(super) cps: Vec<Cp>,
    pub(super) branches: BTreeMap<String, String>,
    pub(super) head: String,
    pub(super) forks: usize,
}

impl Model {
    pub(super) fn get(&self, id: &str) -> &Cp {
        self.cps
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("the model has no checkpoint {id}"))
    }

    pub(super) fn tip(&self) -> Option<&Cp> {
        self.branches.get(&self.head).map(|id| self.get(id))
    }

    pub(super) fn pick(&self, n: usize) -> Option<String> {
        if self.cps.is_empty() {
            None
        } else {
            Some(self.cps[n % self.cps.len()].id.clone())
        }
    }

    /// Adds a checkpoint the tool made from `capture`, child of the current tip, saved by
    /// `hook` (if a hook saved it), with the session paths written since the tip.
    pub(super) fn add(
        &mut self,
        id: &str,
        capture: &Capture,
        hook: Option<Hook>,
        writes: Vec<(Vec<u8>, Writer)>,
    ) {
        let parent = self.tip().map(|c| c.id.clone());
        self.cps.push(Cp {
            id: id.to_string(),
            tree: capture.tree.clone(),
            skipped: capture.skipped.clone(),
            parent,
            hook,
            writes,
        });
    }

    /// The checkpoints from `id` back to the first, following parents.
    pub(super) fn line(&self, id: &str) -> Vec<&Cp> {
        let mut line = Vec::new();
        let mut at = Some(id.to_string());
        while let Some(id) = at {
            let cp = self.get(&id);
            line.push(cp);
            at = cp.parent.clone();
        }
        line
    }

    /// Removes `gone`: children re-linked to the nearest ancestor that stays, branches
    /// whose tip goes moved back there. `None` when a branch would be left empty.
    pub(super) fn remove(&self, gone: &BTreeSet<String>) -> Option<Model> {
        let stays = |id: &Option<String>| -> Option<String> {
            let mut at = id.clone();
            while let Some(id) = at {
                if !gone.contains(&id) {
                    return Some(id);
                }
                at = self.get(&id).parent.clone();
            }
            None
        };
        let mut branches = BTreeMap::new();
        for (name, tip) in &self.branches {
            branches.insert(name.clone(), stays(&Some(tip.clone()))?);
        }
        // A checkpoint that stays takes the writes of those removed between it and its
        // new parent: its change against that parent now holds theirs too.
        let writes_between = |c: &Cp| {
            let mut writes = Vec::new();
            let mut at = c.parent.clone();
            while let Some(id) = at.filter(|id| gone.contains(id)) {
                let removed = self.get(&id);
                writes.splice(0..0, removed.writes.iter().cloned());
                at = removed.parent.clone();
            }
            writes.extend(c.writes.iter().cloned());
            writes
        };
        let cps = self
            .cps
            .iter()
            .filter(|c| !gone.contains(&c.id))
            .map(|c| Cp {
                parent: stays(&c.parent),
                writes: writes_between(c),
                ..c.clone()
            })
            .collect();
        Some(Model {
            cps,
            branches,
            head: self.head.clone(),
            forks: self.forks,
        })
    }
}

/// What `git add -A` would see now, per git itself.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Capture {
    pub(super) tree: Snap,
    pub(super) skipped: BTreeSet<Vec<u8>>,
}

/// Whether every proper ancestor of `rel` below `root` is a real directory.
pub(super) fn parents_are_dirs(root: &Path, rel: &[u8]) -> bool {
    let mut at = 0;
    while let Some(i) = rel[at..].iter().position(|&b| b == b'/') {
        let prefix = &rel[..at + i];
        match std::fs::symlink_metadata(root.join(OsStr::from_bytes(prefix))) {
            Ok(m) if m.file_type().is_dir() => {}
            _ => return false,
        }
        at += i + 1;
    }
    true
}

pub(super) fn capture(repo: &Repo) -> Capture {
    let listed = common::run_cmd(
        repo.sb.git_cmd(
            &repo.dir,
            &[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
        ),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(listed.code, 0, "git ls-files\n{listed}");
    let mut tree = Snap::new();
    let mut skipped = BTreeSet::new();
    for rel in listed
        .stdout_raw
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
    {
        if !parents_are_dirs(&repo.dir, rel) {
            continue;
        }
        let full = repo.dir.join(OsStr::from_bytes(rel));
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).unwrap();
            tree.insert(
                rel.to_vec(),
                Node::Link(target.as_os_str().as_bytes().to_vec()),
            );
        } else if meta.file_type().is_file() {
            if meta.len() > MAX_FILE_SIZE as u64 {
                skipped.insert(rel.to_vec());
            } else {
                let data = std::fs::read(&full).unwrap();
                tree.insert(
                    rel.to_vec(),
                    Node::File {
                        data,
                        exec: meta.mode() & 0o111 != 0,
                    },
                );
            }
        }
    }
    Capture { tree, skipped }
}

/// The files and symlinks of the worktree (directories are not captured).
pub(super) fn leaves(repo: &Repo) -> Snap {
    repo.snapshot()
        .into_iter()
        .filter(|(_, n)| n.is_captured_kind())
        .collect()
}

/// Whether `path` is one of `filter` or below one (no filter: everything).
pub(super) fn covers(filter: &[Vec<u8>], path: &[u8]) -> bool {
    filter.is_empty()
        || filter
            .iter()
            .any(|p| path.starts_with(p) && (path.len() == p.len() || path[p.len()] == b'/'))
}

/// What a restore of `target` (limited to `filter`) should leave, or `None` when a
/// file no checkpoint holds is in the way, so that the restore must be refused.
pub(super) fn expected_restore(
    now: &Snap,
    captured: &Capture,
    target: &Cp,
    filter: &[Vec<u8>],
) -> Option<Snap> {
    // Never written nor deleted: files that are not captured now (ignored, too large)
    // and files the target skipped.
    let spared = |p: &[u8]| {
        !captured.tree.contains_key(p) || captured.skipped.contains(p) || target.skipped.contains(p)
    };
    let mut expected = Snap::new();
    for (p, n) in now {
        if !covers(filter, p) || spared(p) {
            expected.insert(p.clone(), n.clone());
        }
    }
    for (p, n) in &target.tree {
        if !covers(filter, p) {
            continue;
        }
        match expected.get(p) {
            Some(_) if captured.skipped.contains(p) || target.skipped.contains(p) => {}
            // An ignored file the restore would have to overwrite, unless it already
            // holds exactly what the target has.
            Some(there) if there != n => return None,
            Some(_) => {}
            None => {
                expected.insert(p.clone(), n.clone());
            }
        }
    }
    // A file kept where the result needs a directory.
    for p in expected.keys() {
        for (i, &b) in p.iter().enumerate() {
            if b == b'/' && expected.contains_key(&p[..i]) {
                return None;
            }
        }
    }
    Some(expected)
}

/// Names the files no checkpoint holds that the target has byte for byte, which a
/// restore has no reason to refuse.
pub(super) fn identical_in_the_way(
    now: &Snap,
    captured: &Capture,
    target: &Cp,
    filter: &[Vec<u8>],
) -> String {
    let same: Vec<String> = now
        .iter()
        .filter(|(p, n)| {
            covers(filter, p) && !captured.tree.contains_key(*p) && target.tree.get(*p) == Some(n)
        })
        .map(|(p, _)| common::show_path(p))
        .collect();
    if same.is_empty() {
        String::new()
    } else {
        format!(
            " (not captured now, but identical in the target: {})",
            same.join(", ")
        )
    }
}

pub(super) fn show_snap(s: &Snap) -> String {
    s.iter()
        .map(|(p, n)| format!("  {}: {n:?}", common::show_path(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths whose entries differ between two trees, lossy UTF-8 as JSON prints them.
pub(super) fn changed_paths(a: &Snap, b: &Snap) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (p, n) in a {
        if b.get(p) != Some(n) {
            out.insert(String::from_utf8_lossy(p).into_owned());
        }
    }
    for p in b.keys() {
        if !a.contains_key(p) {
            out.insert(String::from_utf8_lossy(p).into_owned());
        }
    }
    out
}

/// The paths of [`SESSION_PATHS`] whose entry differs between `a` and `b`.
pub(super) fn session_paths_changed(a: &Snap, b: &Snap) -> Vec<Vec<u8>> {
    SESSION_PATHS
        .iter()
        .filter(|p| a.get(**p) != b.get(**p))
        .map(|p| p.to_vec())
        .collect()
}
