//! What commands print for people: labels, sizes, times and colour as git shows them.
//! The JSON shapes are in `ui/json/`.

use git_checkpoint::diff::SizeDelta;
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::model::Head;
use git_checkpoint::text::escape_controls;
use git_checkpoint::CheckpointId;

/// A worktree path for messages and JSON: lossy UTF-8.
pub fn show_path(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// A size that may be negative (a store file that grew).
pub fn signed_bytes(bytes: i64) -> String {
    if bytes < 0 {
        format!("-{}", human_bytes(bytes.unsigned_abs()))
    } else {
        human_bytes(bytes as u64)
    }
}

/// A git commit id as people read it: its first 12 digits.
pub fn short_commit(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
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
    use git_checkpoint::clock::rfc3339;

    #[test]
    fn times_read_like_git() {
        let s = 1_000_000_000i128;
        assert_eq!(relative_time(0, 5 * s), "5 seconds ago");
        assert_eq!(relative_time(0, 120 * s), "2 minutes ago");
        assert_eq!(relative_time(0, 3 * 86400 * s), "3 days ago");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    }
}
