//! What commands print: the JSON shapes scripts rely on, and human formatting.

use serde::Serialize;

use git_checkpoint::clock::rfc3339;
use git_checkpoint::diff::SizeDelta;
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::format::text::escape_controls;
use git_checkpoint::model::{Checkpoint, Head};
use git_checkpoint::CheckpointId;

/// The JSON object for a checkpoint (the shapes are listed in the README).
#[derive(Debug, Serialize)]
pub struct CheckpointJson {
    /// Full id.
    pub id: String,
    /// Shortest unique abbreviation.
    pub short_id: String,
    /// Full ids of the parents.
    pub parents: Vec<String>,
    /// The checkpoint branch it was made on.
    pub branch: Option<String>,
    /// Its message.
    pub message: String,
    /// When it was made, RFC 3339 in UTC.
    pub time: String,
    /// The real repository's HEAD commit then.
    pub git_head: Option<String>,
    /// The real repository's branch then.
    pub git_branch: Option<String>,
    /// Metadata as an object.
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// Files and symlinks in its tree.
    pub files: u64,
    /// Total bytes of its files.
    pub bytes: u64,
    /// Files left out: larger than `checkpoint.maxFileSize`, or unreadable.
    pub skipped: Vec<SkippedJson>,
    /// Files stored with it outside its tree.
    pub attachments: Vec<AttachmentJson>,
    /// Whether it is pinned (gc never removes it).
    pub pinned: bool,
}

/// The JSON object for a file a save skipped.
#[derive(Debug, Serialize)]
pub struct SkippedJson {
    /// Its worktree path (lossy UTF-8).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Why: `too-large` or `unreadable`.
    pub reason: &'static str,
}

/// The JSON object for an attachment.
#[derive(Debug, Serialize)]
pub struct AttachmentJson {
    /// The name it was attached under.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
}

impl CheckpointJson {
    /// The JSON view of checkpoint `id`.
    pub fn new(id: CheckpointId, short_id: String, record: &Checkpoint) -> Self {
        CheckpointJson {
            id: id.hex(),
            short_id,
            parents: record.parents.iter().map(|p| p.hex()).collect(),
            branch: record.branch.clone(),
            message: record.message.clone(),
            time: rfc3339(record.time_ns),
            git_head: record.git_head.clone(),
            git_branch: record.git_branch.clone(),
            meta: record
                .meta
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
            files: record.files,
            bytes: record.bytes,
            skipped: record
                .skipped
                .iter()
                .map(|file| SkippedJson {
                    path: String::from_utf8_lossy(&file.path).into_owned(),
                    size: file.size,
                    reason: match file.reason {
                        git_checkpoint::model::SkipReason::TooLarge => "too-large",
                        git_checkpoint::model::SkipReason::Unreadable => "unreadable",
                    },
                })
                .collect(),
            attachments: record
                .attachments
                .iter()
                .map(|a| AttachmentJson {
                    name: a.name.clone(),
                    size: a.size,
                })
                .collect(),
            pinned: false,
        }
    }
}

/// The labels git puts after a commit, for checkpoint `id`: `HEAD -> <branch>` for the
/// branch HEAD names, the other branches at it, or `HEAD` first when detached there.
/// `branches` is sorted by name.
pub fn labels(id: CheckpointId, head: &Head, branches: &[(String, CheckpointId)]) -> Vec<String> {
    let mut out = Vec::new();
    if *head == Head::Detached(id) {
        out.push("HEAD".to_string());
    }
    for (name, _) in branches.iter().filter(|(_, tip)| *tip == id) {
        if matches!(head, Head::Branch(current) if current == name) {
            out.insert(0, format!("HEAD -> {name}"));
        } else {
            out.push(name.clone());
        }
    }
    out
}

/// Labels as `(HEAD -> main, fork-1)`, coloured like git's decorations, control
/// characters in branch names escaped.
pub fn format_labels(labels: &[String], colour: bool) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let painted: Vec<String> = labels
        .iter()
        .map(|label| match label.strip_prefix("HEAD -> ") {
            Some(branch) => format!(
                "{} {}",
                paint("HEAD ->", style::HEAD, colour),
                paint(&escape_controls(branch), style::BRANCH, colour)
            ),
            None if label == "HEAD" => paint(label, style::HEAD, colour),
            None => paint(&escape_controls(label), style::BRANCH, colour),
        })
        .collect();
    format!("({})", painted.join(", "))
}

/// A change summary for log lines: `[3 files +1.2 KiB -40 B]`, parts that are zero
/// left out, `[no change]` for none.
pub fn format_size_delta(delta: &SizeDelta) -> String {
    if delta.files == 0 {
        return "[no change]".to_string();
    }
    let mut text = format!(
        "[{} file{}",
        delta.files,
        if delta.files == 1 { "" } else { "s" }
    );
    if delta.grown > 0 {
        text += &format!(" +{}", human_bytes(delta.grown));
    }
    if delta.shrunk > 0 {
        text += &format!(" -{}", human_bytes(delta.shrunk));
    }
    text.push(']');
    text
}

/// How long ago `time_ns` was, as git prints it ("5 minutes ago").
pub fn relative_time(time_ns: i128, now_ns: i128) -> String {
    format!("{} ago", duration(now_ns - time_ns))
}

/// A length of time in the unit git's relative dates use: "5 seconds", "3 weeks".
pub fn duration(ns: i128) -> String {
    let seconds = (ns / 1_000_000_000).max(0);
    let (n, unit) = match seconds {
        s if s < 90 => (s, "second"),
        s if s < 90 * 60 => (s / 60, "minute"),
        s if s < 36 * 3600 => (s / 3600, "hour"),
        s if s < 14 * 86400 => (s / 86400, "day"),
        s if s < 60 * 86400 => (s / (7 * 86400), "week"),
        s if s < 365 * 86400 => (s / (30 * 86400), "month"),
        s => (s / (365 * 86400), "year"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Whether output to a stream should be coloured: only on a terminal, as git's
/// `color.ui=auto`, and never with `NO_COLOR` set or `TERM=dumb`.
pub fn colour_wanted(is_terminal: bool) -> bool {
    is_terminal
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// SGR codes for the parts of the output git colours.
pub mod style {
    /// Checkpoint ids (git's `color.diff.commit`).
    pub const ID: &str = "33";
    /// Branch names in log labels.
    pub const BRANCH: &str = "1;32";
    /// `HEAD` in log labels.
    pub const HEAD: &str = "1;36";
    /// Secondary detail: times, change summaries.
    pub const DIM: &str = "2";
    /// Diff headers.
    pub const META: &str = "1";
    /// Hunk headers.
    pub const FRAG: &str = "36";
    /// Removed lines.
    pub const OLD: &str = "31";
    /// Added lines.
    pub const NEW: &str = "32";
}

/// `text` wrapped in the SGR `style` when `on`.
pub fn paint(text: &str, style: &str, on: bool) -> String {
    if on && !text.is_empty() {
        format!("\x1b[{style}m{text}\x1b[m")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_like_git() {
        let s = 1_000_000_000i128;
        assert_eq!(relative_time(0, 5 * s), "5 seconds ago");
        assert_eq!(relative_time(0, 120 * s), "2 minutes ago");
        assert_eq!(relative_time(0, 3 * 86400 * s), "3 days ago");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    }
}
