//! Worktree paths as the commands print them in messages and JSON.

/// A path for messages: lossy UTF-8 (a path is bytes; a message is text).
pub fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}
