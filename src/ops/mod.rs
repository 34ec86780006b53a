//! The operations: each takes the worktree and the store, does one job, and returns a
//! typed report that the binary turns into text or JSON.

pub mod gc;
pub mod log;
pub mod restore;
pub mod revert;
pub mod save;
