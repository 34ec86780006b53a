//! The operations: each takes the worktree and the store, does one job, and returns a
//! typed report that the binary turns into text or JSON. [`workspace`] is how a caller
//! gets both: the worktree with its settings, and the one way to open its store.

pub mod blame;
pub mod drop;
pub mod gc;
pub mod log;
mod log_entry;
pub mod log_query;
pub mod log_walk;
pub mod op_log;
pub mod restore;
pub mod revert;
pub mod save;
pub mod session_restore;
pub mod workspace;
