//! What git knows: finding the worktree and asking git about it ([`repo`]), the paths
//! its index tracks ([`index`]), and the `checkpoint.*` settings in its config
//! ([`config`]).

pub mod config;
pub mod index;
pub mod repo;

pub use repo::Repo;
