//! The commit message of an exported checkpoint: the checkpoint's message, a blank line,
//! then one trailer per line for everything else the record holds (docs/design.md,
//! "Sharing through git"). Values that are not plain one-line text are written as
//! `hex:` and their bytes in hex, so every record reads back exactly.

use crate::model::{Checkpoint, SkipReason, SkippedFile};
use crate::{CheckpointId, Error, Result};

const ID: &str = "Checkpoint-Id";
const TIME: &str = "Checkpoint-Time";
const BRANCH: &str = "Checkpoint-Branch";
const GIT_HEAD: &str = "Checkpoint-Git-Head";
const GIT_BRANCH: &str = "Checkpoint-Git-Branch";
const META: &str = "Checkpoint-Meta";
const SKIPPED: &str = "Checkpoint-Skipped";
const ATTACHMENT: &str = "Checkpoint-Attachment";
const ATTACHMENT_LEFT_OUT: &str = "Checkpoint-Attachment-Left-Out";

/// A record as read back from a commit message: the fields a commit does not carry
/// itself (tree and parents come from the commit).
#[derive(Debug, Default)]
pub struct Trailers {
    /// The id the checkpoint had in the store that exported it.
    pub id: CheckpointId,
    /// The checkpoint's time in nanoseconds.
    pub time_ns: i128,
    /// The message.
    pub message: String,
    /// The checkpoint branch it was saved on.
    pub branch: Option<String>,
    /// The repository's HEAD commit at save time.
    pub git_head: Option<String>,
    /// The repository's branch at save time.
    pub git_branch: Option<String>,
    /// Metadata, in order.
    pub meta: Vec<(String, String)>,
    /// Files the save left out.
    pub skipped: Vec<SkippedFile>,
    /// The attachments exported with the commit, in order.
    pub attachments: Vec<AttachmentBlob>,
}

/// An attachment as a commit's trailer names it: its content is the git blob `blob`,
/// kept reachable by the branch's attachments ref (docs/design.md, "Sharing through
/// git").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentBlob {
    /// The name it was attached under.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
    /// The git blob holding its bytes.
    pub blob: String,
}

/// A value as a trailer writes it: as it is when it is one line of printable text that
/// cannot be mistaken for the hex form, else `hex:` and its bytes.
fn field(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text)
            if !text.starts_with("hex:")
                && !text.chars().any(char::is_control)
                && text.trim() == text =>
        {
            text.to_string()
        }
        _ => {
            let mut out = String::from("hex:");
            for b in bytes {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
    }
}

/// The bytes of a value [`field`] wrote.
fn unfield(text: &str) -> Result<Vec<u8>> {
    let Some(hex) = text.strip_prefix("hex:") else {
        return Ok(text.as_bytes().to_vec());
    };
    if hex.len() % 2 != 0 {
        return Err(bad(format!("odd hex value '{text}'")));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| bad(format!("bad hex value '{text}'")))
        })
        .collect()
}

fn unfield_text(text: &str) -> Result<String> {
    String::from_utf8(unfield(text)?).map_err(|_| bad(format!("'{text}' is not UTF-8")))
}

fn bad(why: String) -> Error {
    Error::RemoteCommit { commit: None, why }
}

/// The commit message for checkpoint `id`. `blobs` gives the git blob of each of the
/// record's attachments, in order; without them (`None`) the attachments are left out
/// and a trailer only says they existed.
pub fn encode(id: CheckpointId, record: &Checkpoint, blobs: Option<&[String]>) -> String {
    let mut out = record.message.clone();
    out.push_str("\n\n");
    let mut line = |key: &str, value: String| {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&value);
        out.push('\n');
    };
    line(ID, id.hex());
    line(TIME, record.time_ns.to_string());
    if let Some(branch) = &record.branch {
        line(BRANCH, field(branch.as_bytes()));
    }
    if let Some(head) = &record.git_head {
        line(GIT_HEAD, field(head.as_bytes()));
    }
    if let Some(branch) = &record.git_branch {
        line(GIT_BRANCH, field(branch.as_bytes()));
    }
    for (key, value) in &record.meta {
        line(
            META,
            format!("{} {}", field(key.as_bytes()), field(value.as_bytes())),
        );
    }
    for skipped in &record.skipped {
        let reason = match skipped.reason {
            SkipReason::TooLarge => "too-large",
            SkipReason::Unreadable => "unreadable",
        };
        line(
            SKIPPED,
            format!("{reason} {} {}", skipped.size, field(&skipped.path)),
        );
    }
    for (n, attachment) in record.attachments.iter().enumerate() {
        match blobs.and_then(|blobs| blobs.get(n)) {
            Some(blob) => line(
                ATTACHMENT,
                format!(
                    "{} {blob} {}",
                    attachment.size,
                    field(attachment.name.as_bytes())
                ),
            ),
            None => line(
                ATTACHMENT_LEFT_OUT,
                format!("{} {}", attachment.size, field(attachment.name.as_bytes())),
            ),
        }
    }
    out
}

/// Reads back what [`encode`] wrote; a message without a `Checkpoint-Id` trailer is not
/// a checkpoint's.
pub fn decode(message: &str) -> Result<Trailers> {
    let (body, trailers) = message
        .rsplit_once("\n\n")
        .ok_or_else(|| bad("no trailers".into()))?;
    let mut out = Trailers {
        message: body.to_string(),
        ..Trailers::default()
    };
    let mut seen_id = false;
    for line in trailers.lines() {
        let (key, value) = line
            .split_once(": ")
            .ok_or_else(|| bad(format!("trailer line '{line}'")))?;
        match key {
            ID => {
                out.id = CheckpointId(
                    u128::from_str_radix(value, 16)
                        .map_err(|_| bad(format!("checkpoint id '{value}'")))?,
                );
                seen_id = true;
            }
            TIME => out.time_ns = value.parse().map_err(|_| bad(format!("time '{value}'")))?,
            BRANCH => out.branch = Some(unfield_text(value)?),
            GIT_HEAD => out.git_head = Some(unfield_text(value)?),
            GIT_BRANCH => out.git_branch = Some(unfield_text(value)?),
            META => {
                let (k, v) = value
                    .split_once(' ')
                    .ok_or_else(|| bad(format!("meta '{value}'")))?;
                out.meta.push((unfield_text(k)?, unfield_text(v)?));
            }
            SKIPPED => {
                let mut parts = value.splitn(3, ' ');
                let (Some(reason), Some(size), Some(path)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return Err(bad(format!("skipped file '{value}'")));
                };
                out.skipped.push(SkippedFile {
                    path: unfield(path)?,
                    size: size
                        .parse()
                        .map_err(|_| bad(format!("skipped size '{size}'")))?,
                    reason: match reason {
                        "unreadable" => SkipReason::Unreadable,
                        _ => SkipReason::TooLarge,
                    },
                });
            }
            ATTACHMENT => {
                let mut parts = value.splitn(3, ' ');
                let (Some(size), Some(blob), Some(name)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return Err(bad(format!("attachment '{value}'")));
                };
                if blob.is_empty() || !blob.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(bad(format!("attachment blob '{blob}'")));
                }
                out.attachments.push(AttachmentBlob {
                    name: unfield_text(name)?,
                    size: size
                        .parse()
                        .map_err(|_| bad(format!("attachment size '{size}'")))?,
                    blob: blob.to_string(),
                });
            }
            // A left-out attachment's trailer only says it existed. Unknown trailers
            // come from newer builds and carry nothing this one keeps.
            _ => {}
        }
    }
    if !seen_id {
        return Err(bad("no Checkpoint-Id trailer".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Attachment;

    #[test]
    fn every_field_reads_back_exactly() {
        let record = Checkpoint {
            message: "two\n\nparagraphs\n\nCheckpoint-Id: fake".into(),
            time_ns: -5,
            branch: Some("ci/run-1".into()),
            git_head: Some("abc".into()),
            git_branch: None,
            meta: vec![
                ("agent".into(), "a b".into()),
                ("multi".into(), "line\nvalue".into()),
                ("hex:".into(), " padded ".into()),
            ],
            skipped: vec![SkippedFile {
                path: b"big\xff file".to_vec(),
                size: 9,
                reason: SkipReason::TooLarge,
            }],
            attachments: vec![Attachment {
                name: "t.json".into(),
                size: 3,
                chunks: vec![],
            }],
            ..Checkpoint::default()
        };
        let blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391".to_string();
        let back = decode(&encode(
            CheckpointId(42),
            &record,
            Some(std::slice::from_ref(&blob)),
        ))
        .unwrap();
        assert_eq!(back.id, CheckpointId(42));
        assert_eq!(back.message, record.message);
        assert_eq!(back.time_ns, -5);
        assert_eq!(back.branch, record.branch);
        assert_eq!(back.git_head, record.git_head);
        assert_eq!(back.git_branch, None);
        assert_eq!(back.meta, record.meta);
        assert_eq!(back.skipped, record.skipped);
        assert_eq!(
            back.attachments,
            vec![AttachmentBlob {
                name: "t.json".into(),
                size: 3,
                blob
            }]
        );
        let left_out = decode(&encode(CheckpointId(42), &record, None)).unwrap();
        assert!(left_out.attachments.is_empty());
        assert!(decode("plain commit\n\nSigned-off-by: x").is_err());
    }
}
