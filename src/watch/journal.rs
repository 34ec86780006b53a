//! The watcher's journal: every worktree path an event named, with the number of the
//! last event that named it. A token (instance, number) then asks "what changed since",
//! and the answer is exact as long as the instance has seen every event since the token
//! was handed out; anything that breaks that (a lost event, a directory it could not
//! watch) starts a new instance, which makes every older token stale.

use std::collections::HashMap;

use super::Token;

/// More distinct paths than this and the journal starts over: a save asked for that many
/// is no faster than a walk, and the journal's memory stays bounded.
pub const MAX_PATHS: usize = 200_000;

/// What changed since a token, as [`Journal::since`] answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Since {
    /// The paths named by an event numbered after the token, sorted.
    Paths(Vec<Vec<u8>>),
    /// The token is not this instance's, or the journal cannot vouch for the worktree.
    Stale,
}

/// The journal of one watcher process.
#[derive(Debug)]
pub struct Journal {
    instance: u64,
    seq: u64,
    paths: HashMap<Vec<u8>, u64>,
    /// A directory could not be watched: until a new instance starts, nothing is vouched.
    blind: bool,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new()
    }
}

impl Journal {
    /// A journal with a fresh instance id and nothing in it.
    pub fn new() -> Journal {
        Journal {
            instance: fresh_instance(),
            seq: 0,
            paths: HashMap::new(),
            blind: false,
        }
    }

    /// The token that describes the worktree as of now.
    pub fn token(&self) -> Token {
        Token {
            instance: self.instance,
            seq: self.seq,
        }
    }

    /// Records that an event named `path`.
    pub fn record(&mut self, path: Vec<u8>) {
        self.seq += 1;
        self.paths.insert(path, self.seq);
        if self.paths.len() > MAX_PATHS {
            self.restart();
        }
    }

    /// Forgets everything: events were lost, so every token handed out so far is stale.
    pub fn restart(&mut self) {
        *self = Journal::new();
    }

    /// Marks the journal as unable to vouch for the worktree (a directory it could not
    /// watch); only [`Journal::restart`] clears that.
    pub fn go_blind(&mut self) {
        self.restart();
        self.blind = true;
    }

    /// Whether the journal vouches for nothing.
    pub fn is_blind(&self) -> bool {
        self.blind
    }

    /// The paths changed since `token`.
    pub fn since(&self, token: Option<Token>) -> Since {
        match token {
            Some(token)
                if !self.blind && token.instance == self.instance && token.seq <= self.seq =>
            {
                let mut paths: Vec<Vec<u8>> = self
                    .paths
                    .iter()
                    .filter(|&(_, &seq)| seq > token.seq)
                    .map(|(path, _)| path.clone())
                    .collect();
                paths.sort_unstable();
                Since::Paths(paths)
            }
            _ => Since::Stale,
        }
    }
}

/// A random instance id: a token from another watcher process, or from before a restart,
/// never matches.
fn fresh_instance() -> u64 {
    rand::random::<u64>() | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_sees_exactly_the_paths_named_after_it() {
        let mut journal = Journal::new();
        journal.record(b"a".to_vec());
        let token = journal.token();
        journal.record(b"b".to_vec());
        journal.record(b"a".to_vec());
        assert_eq!(
            journal.since(Some(token)),
            Since::Paths(vec![b"a".to_vec(), b"b".to_vec()])
        );
        assert_eq!(journal.since(Some(journal.token())), Since::Paths(vec![]));
    }

    #[test]
    fn a_restart_or_blindness_makes_every_older_token_stale() {
        let mut journal = Journal::new();
        let token = journal.token();
        journal.restart();
        assert_eq!(journal.since(Some(token)), Since::Stale);
        assert_eq!(journal.since(None), Since::Stale);
        let token = journal.token();
        journal.go_blind();
        assert_eq!(journal.since(Some(token)), Since::Stale);
        assert_eq!(journal.since(Some(journal.token())), Since::Stale);
    }
}
