//! What git knows: finding the worktree and reading its configuration and HEAD
//! ([`repo`]; in-process where that is certain, else by asking git), and the paths
//! its index tracks ([`index`]). What the `checkpoint.*` keys mean is not git's
//! business: that is [`crate::settings`], above this module. Nothing here opens the
//! store.
//!
//! Inside, from the bottom: `config_syntax` (one file's text), `config_env` (the
//! environment's and `-c` entries), `discover` (the walk up for `.git`), `config` (every
//! file in git's order, with includes), `refs` (HEAD), then `repo`.

mod config;
mod config_env;
mod config_syntax;
mod discover;
pub mod index;
mod refs;
pub mod repo;

pub use repo::Repo;
