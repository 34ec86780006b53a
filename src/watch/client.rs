//! Talking to the watcher over its socket. A watcher that is not there (no socket, a
//! socket nobody listens on) is found out at once; one that does not answer in time is
//! given up on. Either way the caller walks: it never waits on a dead watcher.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::Token;
use crate::git::repo::Repo;
use crate::{Error, Result};

/// How long a save waits for the watcher's answer before it walks instead. The answer
/// normally takes well under a millisecond; this only bounds a watcher that is busy
/// (catching up on a burst) or stuck. On macOS the watcher first waits for its cookie's
/// event (`watch::cookie`), which FSEvents delivers some milliseconds late.
pub const ANSWER_TIMEOUT: Duration = if cfg!(target_os = "macos") {
    Duration::from_millis(500)
} else {
    Duration::from_millis(100)
};

/// [`ANSWER_TIMEOUT`], or in test builds `GIT_CHECKPOINT_WATCH_ANSWER_MS`: the tests
/// check what a watched save records, not how fast a watcher answers on a machine busy
/// with other tests, so they give it longer (a late answer only makes the save walk,
/// which a test asserting a watched save would report as a failure). The watcher waits
/// for a cookie's event as long, no longer: past it nobody waits for the answer.
pub(crate) fn answer_timeout() -> Duration {
    if cfg!(feature = "test-hooks") {
        if let Some(ms) = std::env::var("GIT_CHECKPOINT_WATCH_ANSWER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            return Duration::from_millis(ms);
        }
    }
    ANSWER_TIMEOUT
}

/// The watcher's answer to "what changed since".
#[derive(Debug)]
pub enum Answer {
    /// The paths changed between the token asked about and `token`, sorted.
    Changes {
        /// The token describing the worktree now.
        token: Token,
        /// The worktree paths any event named since.
        paths: Vec<Vec<u8>>,
    },
    /// The token asked about is stale; `token` is good from now on.
    Stale {
        /// The token describing the worktree now.
        token: Token,
    },
}

/// Asks the watcher of `repo` for the current token and the paths changed since `since`.
/// `None`: no watcher answered in time.
pub fn ask(repo: &Repo, since: Option<Token>) -> Option<Answer> {
    let request = match since {
        Some(token) => format!("since {}\n", token.encode()),
        None => "since none\n".to_string(),
    };
    let reply = exchange(repo, &request, answer_timeout()).ok()?;
    parse_answer(&reply)
}

fn parse_answer(reply: &[u8]) -> Option<Answer> {
    let newline = reply.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&reply[..newline]).ok()?;
    let rest = &reply[newline + 1..];
    let (kind, token) = header.split_once(' ')?;
    let token = Token::decode(token)?;
    match kind {
        "stale" => Some(Answer::Stale { token }),
        "changes" => Some(Answer::Changes {
            token,
            paths: rest
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(<[u8]>::to_vec)
                .collect(),
        }),
        _ => None,
    }
}

/// Sends one request to the watcher of `repo` and reads the whole reply, within
/// `timeout` in all.
fn exchange(repo: &Repo, request: &str, timeout: Duration) -> std::io::Result<Vec<u8>> {
    exchange_at(&super::dir(repo), request, timeout)
}

/// Sends one request to the watcher whose directory is `watch_dir` and reads the whole
/// reply, within `timeout` in all.
fn exchange_at(watch_dir: &Path, request: &str, timeout: Duration) -> std::io::Result<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let socket = watch_dir.join("socket");
    // Only a socket of the user's own in the watcher's own directory: a symlink planted
    // there could lead a save to a forged watcher that vouches for anything.
    let ours = super::is_trusted_dir(watch_dir)
        && std::fs::symlink_metadata(&socket).is_ok_and(|meta| {
            meta.file_type().is_socket() && meta.uid() == rustix::process::geteuid().as_raw()
        });
    if !ours {
        return Err(std::io::ErrorKind::NotFound.into());
    }
    let mut stream = UnixStream::connect(&socket)?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(request.as_bytes())?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf)? {
            0 => return Ok(reply),
            n => reply.extend_from_slice(&buf[..n]),
        }
    }
}

/// The pid of the watcher running on `repo`'s worktree, if one answers.
pub fn running(repo: &Repo) -> Option<u32> {
    let reply = exchange(repo, "ping\n", Duration::from_secs(2)).ok()?;
    let line = BufReader::new(reply.as_slice()).lines().next()?.ok()?;
    line.strip_prefix("watching ")?.trim().parse().ok()
}

/// Asks the watcher whose directory is `watch_dir` to stop so that another worktree's
/// can start ([`super::share`]); whether it took the request. It stops at once; the
/// caller waits for its registry entry to go.
pub fn make_room(watch_dir: &Path) -> bool {
    exchange_at(watch_dir, "make-room\n", Duration::from_secs(1))
        .is_ok_and(|reply| reply.starts_with(b"stopping"))
}

/// Asks the watcher of `repo` to stop and waits until it has; `Ok(None)` if none ran.
/// A stale socket or pid file is removed.
pub fn stop(repo: &Repo) -> Result<Option<u32>> {
    let pid = running(repo);
    if let Some(pid) = pid {
        let _ = exchange(repo, "stop\n", Duration::from_secs(2));
        let deadline = Instant::now() + Duration::from_secs(10);
        while super::is_locked(repo) {
            if Instant::now() > deadline {
                return Err(Error::InvalidArgument(format!(
                    "the watcher (pid {pid}) did not stop within 10 seconds"
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    super::clean_up_if_dead(repo);
    Ok(pid)
}
