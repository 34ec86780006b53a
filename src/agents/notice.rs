//! What a hook run tells the user, besides saving: files its saves leave out because
//! they cannot be read, or that it could not save at all. A hook must never stop the
//! agent, and an agent runs one after every step, so each thing is told once per
//! session: the hooks log gets it, and the agent's own UI where its hook contract has a
//! channel for it ([`super::Agent::reply_with_notice`]). What was told is remembered in
//! `<git-dir>/checkpoint/hooks.told`, one line per session and thing (a hash, so that no
//! session id or file name is kept there).

use std::io::{Read, Write};

use super::hooks_log::log_note;
use crate::format::path::quote_path;
use crate::git::repo::Repo;
use crate::text::{escape_controls, list_names};

/// Where what hook runs told is remembered, inside `<git-dir>/checkpoint`.
pub const HOOKS_TOLD: &str = "hooks.told";

/// Past this size, the memory keeps only its newer half: the sessions told long ago
/// would at worst hear of the same thing once more.
const TOLD_LIMIT: u64 = 64 << 10;

/// How many file names a notice names; the others are counted.
const NAMED: usize = 3;

/// The notice for the files a hook run's save left out as unreadable, `unreadable`,
/// naming those not told of in this session of `agent` yet; `None` when all were. The
/// notice is remembered as told, and logged.
pub(super) fn unreadable(
    repo: &Repo,
    agent: &str,
    session: Option<&str>,
    unreadable: &[Vec<u8>],
) -> Option<String> {
    let mut memory = Memory::read(repo, agent, session);
    let new: Vec<&Vec<u8>> = unreadable
        .iter()
        .filter(|path| memory.first_time(b"unreadable", path))
        .collect();
    if new.is_empty() {
        return None;
    }
    memory.write();
    let names: Vec<String> = new.iter().map(|p| quote_path(p)).collect();
    let them = match new.len() {
        1 => "it",
        _ => "them",
    };
    let text = format!(
        "git-checkpoint cannot read {} and leaves {them} out of this session's checkpoints \
         (a restore leaves {them} alone): make {them} readable, or ignore {them} \
         (said once per session)",
        list_names(&names, NAMED)
    );
    log_note(repo, &text);
    Some(text)
}

/// The notice for a hook run of `agent` that could not save (`error`), once per session;
/// remembered as told. The failure itself is logged by the caller, every time.
pub(super) fn failed(
    repo: &Repo,
    agent: &str,
    session: Option<&str>,
    error: &str,
) -> Option<String> {
    let mut memory = Memory::read(repo, agent, session);
    if !memory.first_time(b"failed", b"") {
        return None;
    }
    memory.write();
    Some(format!(
        "git-checkpoint could not save a checkpoint of this step: {} (said once per \
         session; every failure is logged in {})",
        escape_controls(error),
        repo.checkpoint_dir().join(super::HOOKS_LOG).display()
    ))
}

/// What hook runs told, for one session of one agent.
struct Memory {
    path: std::path::PathBuf,
    /// Every line of the file.
    lines: Vec<String>,
    /// The lines to add.
    new: Vec<String>,
    /// The session's part of each line's hash.
    session: Vec<u8>,
}

impl Memory {
    fn read(repo: &Repo, agent: &str, session: Option<&str>) -> Memory {
        let path = repo.checkpoint_dir().join(HOOKS_TOLD);
        let mut text = String::new();
        if let Ok(file) = std::fs::File::open(&path) {
            let _ = file.take(2 * TOLD_LIMIT).read_to_string(&mut text);
        }
        let mut session_key = agent.as_bytes().to_vec();
        session_key.push(0);
        // Events without a session (a payload that could not be read) share one.
        session_key.extend_from_slice(session.unwrap_or_default().as_bytes());
        session_key.push(0);
        Memory {
            path,
            lines: text.lines().map(str::to_string).collect(),
            new: Vec::new(),
            session: session_key,
        }
    }

    /// Whether `what` about `path` was not told in this session yet; it is from now on.
    fn first_time(&mut self, what: &[u8], path: &[u8]) -> bool {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&self.session);
        hasher.update(what);
        hasher.update(&[0]);
        hasher.update(path);
        let line = hasher.finalize().to_hex()[..32].to_string();
        if self.lines.contains(&line) || self.new.contains(&line) {
            return false;
        }
        self.new.push(line);
        true
    }

    /// Adds the new lines; past [`TOLD_LIMIT`], rewrites the file with the newer half.
    /// A failure only means the user may be told again.
    fn write(self) {
        let _ = std::fs::create_dir_all(self.path.parent().unwrap_or(&self.path));
        let added: String = self.new.iter().map(|line| format!("{line}\n")).collect();
        let size = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if size + added.len() as u64 <= TOLD_LIMIT {
            if let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
            {
                let _ = file.write_all(added.as_bytes());
            }
            return;
        }
        let keep = &self.lines[self.lines.len() / 2..];
        let mut text: String = keep.iter().map(|line| format!("{line}\n")).collect();
        text.push_str(&added);
        let temp = self.path.with_extension("tmp");
        let _ = std::fs::remove_file(&temp);
        if std::fs::write(&temp, text).is_ok() {
            let _ = std::fs::rename(&temp, &self.path);
        }
    }
}
