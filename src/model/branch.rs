//! Branch names: which names a branch may have. A [`BranchName`] has passed the rules,
//! so code that takes one never checks again.

use crate::model::revision::MIN_PREFIX;
use crate::{Error, Result};

/// The default branch of a new store.
pub const DEFAULT_BRANCH: &str = "main";

/// A name a branch may have.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BranchName(String);

impl BranchName {
    /// `name`, if it is one a branch may have (`check_branch_name`).
    pub fn new(name: &str) -> Result<BranchName> {
        check_branch_name(name)?;
        Ok(BranchName(name.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BranchName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Refuses names that could not be typed back as a revision, or that would read as
/// something else in one: git's ref-name rules, plus no pure hex of [`MIN_PREFIX`]+
/// digits (it would hide the checkpoint ids it looks like).
fn check_branch_name(name: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 200 {
        Some("it is longer than 200 bytes")
    } else if name == "@" || name == "HEAD" {
        Some("it names the current checkpoint")
    } else if name
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        Some("it holds a space, a control character or one of ~ ^ : ? * [ \\")
    } else if name.contains("..") || name.contains("//") || name.contains("@{") {
        Some("it holds '..', '//' or '@{'")
    } else if name.starts_with(['-', '.', '/']) || name.ends_with(['/', '.']) {
        Some("it starts with '-', '.' or '/', or ends with '/' or '.'")
    } else if name.ends_with(".lock") {
        Some("it ends with '.lock'")
    } else if name.len() >= MIN_PREFIX && name.bytes().all(|b| b.is_ascii_hexdigit()) {
        Some("it looks like a checkpoint id")
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::InvalidBranchName {
            name: name.to_string(),
            why: why.to_string(),
        }),
        None => Ok(()),
    }
}
