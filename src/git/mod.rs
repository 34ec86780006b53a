//! What git knows: finding the worktree and asking git about it ([`repo`]), the paths
//! its index tracks ([`index`]), and the `checkpoint.*` settings in its config
//! ([`settings`]).

pub mod index;
pub mod repo;
pub mod settings;

pub use repo::Repo;
pub use settings::Settings;
