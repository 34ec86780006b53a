//! The operations: each takes the worktree and the store, does one job, and returns a
//! typed report that the binary turns into text or JSON.

pub mod blame;
pub mod gc;
pub mod log;
pub mod log_query;
pub mod restore;
pub mod save;
