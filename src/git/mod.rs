//! What git knows: finding the worktree and reading its configuration and HEAD
//! ([`repo`]; in-process where that is certain, else by asking git), the paths
//! its index tracks ([`index`]), and the `checkpoint.*` settings in its config
//! ([`settings`]).

mod config;
mod discover;
pub mod index;
mod refs;
pub mod repo;
pub mod settings;

pub use repo::Repo;
pub use settings::Settings;
