//! The guard before a push publishes anything: files and attachments that look like
//! secrets (private keys, `.env`-style files, common token formats) are refused unless
//! named with `--allow`. It looks at names and at content: a file's first
//! [`SCAN_LIMIT`] bytes, an attachment's every byte ([`scan`]).

/// How much of a file's content is searched for key headers and tokens.
pub const SCAN_LIMIT: usize = 1 << 20;

/// How much of the content already searched is searched again with the next piece, so
/// that a key header or token cut by a piece boundary is still found.
const OVERLAP: usize = 4096;

/// Why `path` with content `content` (its first [`SCAN_LIMIT`] bytes) looks like a
/// secret, if it does.
pub fn looks_secret(path: &[u8], content: &[u8]) -> Option<&'static str> {
    secret_name(path).or_else(|| secret_content(&content[..content.len().min(SCAN_LIMIT)]))
}

/// Why `path` looks like a secret by its name alone, if it does.
fn secret_name(path: &[u8]) -> Option<&'static str> {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    if name == ".env"
        || (name.starts_with(".env.")
            && ![".env.example", ".env.sample", ".env.template", ".env.dist"]
                .contains(&name.as_str()))
        || name.ends_with(".env")
    {
        return Some("an environment file");
    }
    if [
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    ]
    .contains(&name.as_str())
    {
        return Some("an SSH private key");
    }
    None
}

/// Why `text` looks like it holds a secret, if it does.
fn secret_content(text: &[u8]) -> Option<&'static str> {
    if has_private_key_header(text) {
        return Some("a private key");
    }
    token_kind(text)
}

/// [`looks_secret`] of content that `read` hands over piece by piece, never holding more
/// than a piece and `OVERLAP` bytes: only the first `limit` bytes when given, else all
/// of it. `read` stops when its callback returns false.
pub fn scan<E>(
    path: &[u8],
    limit: Option<usize>,
    read: impl FnOnce(&mut dyn FnMut(&[u8]) -> bool) -> Result<(), E>,
) -> Result<Option<&'static str>, E> {
    if let Some(why) = secret_name(path) {
        return Ok(Some(why));
    }
    let mut window: Vec<u8> = Vec::new();
    let mut seen = 0usize;
    let mut found = None;
    read(&mut |piece| {
        let piece = match limit {
            Some(limit) => &piece[..piece.len().min(limit.saturating_sub(seen))],
            None => piece,
        };
        seen += piece.len();
        window.extend_from_slice(piece);
        found = secret_content(&window);
        let keep = window.len().min(OVERLAP);
        window.drain(..window.len() - keep);
        found.is_none() && limit.is_none_or(|limit| seen < limit)
    })?;
    Ok(found)
}

/// Whether `text` holds a PEM or OpenSSH private key header
/// (`-----BEGIN ... PRIVATE KEY-----`).
fn has_private_key_header(text: &[u8]) -> bool {
    let begin = b"-----BEGIN ";
    let mut rest = text;
    while let Some(at) = find(rest, begin) {
        let after = &rest[at + begin.len()..];
        let line_end = after
            .iter()
            .position(|&b| b == b'\n' || b == b'-')
            .unwrap_or(after.len());
        if after[..line_end].ends_with(b"PRIVATE KEY") {
            return true;
        }
        rest = after;
    }
    false
}

/// The kind of the first well-known access token in `text`, if any: a prefix and the
/// number of token characters at least that follow it.
fn token_kind(text: &[u8]) -> Option<&'static str> {
    const TOKENS: [(&[u8], usize, &str); 9] = [
        (b"ghp_", 30, "a GitHub token"),
        (b"gho_", 30, "a GitHub token"),
        (b"ghs_", 30, "a GitHub token"),
        (b"github_pat_", 30, "a GitHub token"),
        (b"glpat-", 20, "a GitLab token"),
        (b"xoxb-", 20, "a Slack token"),
        (b"xoxp-", 20, "a Slack token"),
        (b"sk-ant-", 30, "an Anthropic API key"),
        (b"AKIA", 16, "an AWS access key"),
    ];
    for (prefix, min, kind) in TOKENS {
        let mut rest = text;
        while let Some(at) = find(rest, prefix) {
            let after = &rest[at + prefix.len()..];
            let run = after
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
                .count();
            let boundary = at == 0 || !rest[at - 1].is_ascii_alphanumeric();
            if boundary && run >= min {
                return Some(kind);
            }
            rest = after;
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_headers_and_tokens() {
        assert!(looks_secret(b".env", b"").is_some());
        assert!(looks_secret(b"app/.env.local", b"").is_some());
        assert!(looks_secret(b".env.example", b"A=1").is_none());
        assert!(looks_secret(b"home/id_ed25519", b"").is_some());
        assert!(looks_secret(b"id_ed25519.pub", b"ssh-ed25519 AAAA").is_none());
        assert!(looks_secret(b"k.pem", b"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n").is_some());
        assert!(looks_secret(b"cert.pem", b"-----BEGIN CERTIFICATE-----\n").is_none());
        assert!(looks_secret(
            b"config.txt",
            b"token = ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        )
        .is_some());
        assert!(looks_secret(b"src/main.rs", b"fn main() { let ghp_ = 1; }").is_none());
    }

    /// Content handed over in pieces is searched whole, across piece boundaries, and only
    /// up to the limit when there is one.
    #[test]
    fn scanning_in_pieces_finds_what_crosses_a_boundary() {
        let mut text = vec![b'x'; 10_000];
        text.extend_from_slice(b" sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 ");
        text.extend_from_slice(&[b'y'; 5_000]);
        let pieces = |size: usize| {
            let text = text.clone();
            move |out: &mut dyn FnMut(&[u8]) -> bool| -> Result<(), ()> {
                for piece in text.chunks(size) {
                    if !out(piece) {
                        break;
                    }
                }
                Ok(())
            }
        };
        for size in [1, 7, 10_005, 1 << 20] {
            assert_eq!(
                scan(b"t.jsonl", None, pieces(size)),
                Ok(Some("an Anthropic API key")),
                "{size}"
            );
        }
        assert_eq!(scan(b"t.jsonl", Some(9_000), pieces(4096)), Ok(None));
        assert_eq!(
            scan(b".env", None, pieces(4096)),
            Ok(Some("an environment file"))
        );
    }
}
