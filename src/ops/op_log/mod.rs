//! The operation log's operations (docs/undo.md; docs/design.md, "The operation log"):
//! reading the log as a history, `undo`, `redo` and `op restore`.
//!
//! Every command that changes the worktree, a branch or the store records one operation
//! in the transaction of its change (the storage layer's
//! [`crate::storage::Transaction::record_operation`]; restore, revert, drop, pin, gc,
//! fetch and pull call it). This module reads those records: `history` replays them into
//! what is in effect and what is undone, `undo` plans going back over one, `to_state`
//! plans `op restore`, and `carry` carries a plan out as one more operation, through a
//! restore when the worktree changes. An MCP tool or a terminal UI wraps [`undo()`],
//! [`redo()`], [`undo_op()`] and [`restore_op()`] as the command line does.

mod carry;
mod history;
mod to_state;
mod undo;

pub use carry::{Moved, UndoOptions, UndoReport};
pub use history::{Entry, History};
pub use to_state::restore_op;
pub use undo::{redo, undo, undo_op};
