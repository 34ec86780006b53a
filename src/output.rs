//! What commands print: the JSON shapes scripts rely on, and human formatting.

use serde::Serialize;

use crate::dag::Checkpoint;
use crate::Id;

/// The JSON object for a checkpoint (DESIGN: "--json output").
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
    /// Whether it is pinned (gc never removes it).
    pub pinned: bool,
}

impl CheckpointJson {
    /// The JSON view of checkpoint `id`.
    pub fn new(id: Id, short_id: String, record: &Checkpoint) -> Self {
        CheckpointJson {
            id: id.hex(),
            short_id,
            parents: record.parents.iter().map(|&p| Id(p).hex()).collect(),
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
            pinned: false,
        }
    }
}

/// A Unix time in nanoseconds as RFC 3339 in UTC.
pub fn rfc3339(time_ns: i128) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(time_ns)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// How long ago `time_ns` was, as git prints it ("5 minutes ago").
pub fn relative_time(time_ns: i128, now_ns: i128) -> String {
    let seconds = ((now_ns - time_ns) / 1_000_000_000).max(0);
    let (n, unit) = match seconds {
        s if s < 90 => (s, "second"),
        s if s < 90 * 60 => (s / 60, "minute"),
        s if s < 36 * 3600 => (s / 3600, "hour"),
        s if s < 14 * 86400 => (s / 86400, "day"),
        s if s < 60 * 86400 => (s / (7 * 86400), "week"),
        s if s < 365 * 86400 => (s / (30 * 86400), "month"),
        s => (s / (365 * 86400), "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

/// A byte count for people: 1.2 MiB.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
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
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
