//! The tables of the store file, all of them: this is the one list in the code (the
//! design's is docs/design.md, "Tables"). Only the storage layer names them: everything else reads and writes through [`super::Snapshot`] and
//! [`super::Transaction`].

use redb::TableDefinition;

/// Store-wide settings.
pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The key in [`META`] of the store's format (one byte: the layout of the tables).
pub(super) const META_FORMAT: &str = "format";
/// Format 3: packs that may hold large solid blocks (codec 4), set by the recompression
/// that first writes one (`pack::recompress`), so that builds reading up to format 2
/// refuse the store as newer instead of reading those blocks as damaged. The newest
/// format this build reads (`store::STORE_FORMAT` is what a new store starts at).
pub(super) const LARGE_BLOCKS_FORMAT: u8 = 3;
/// The chunk index: by chunk id, where the chunk is (see [`crate::storage::pack`]).
pub(super) const CHUNKS: TableDefinition<u128, &[u8]> = TableDefinition::new("chunks");
/// Packs of stored chunks, by sequence number.
pub(super) const PACKS: TableDefinition<u64, &[u8]> = TableDefinition::new("packs");
/// Tree records by id.
pub(super) const TREES: TableDefinition<u128, &[u8]> = TableDefinition::new("trees");
/// Checkpoint records by id.
pub(super) const CHECKPOINTS: TableDefinition<u128, &[u8]> = TableDefinition::new("checkpoints");
/// Branch name to checkpoint id.
pub(super) const BRANCHES: TableDefinition<&str, u128> = TableDefinition::new("branches");
/// Small named records: `head`, `restoring` (the restore marker).
pub(super) const STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("state");
/// Worktree path to the metadata and content ids seen at the last save.
pub(super) const STAT_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("stat_cache");
/// Worktree directory path to what the last walk that listed it kept
/// ([`crate::model::dir_cache`]). Made by the first save that writes a listing.
pub(super) const DIR_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("dir_cache");
/// Pinned checkpoints.
pub(super) const PINS: TableDefinition<u128, ()> = TableDefinition::new("pins");
/// Exported checkpoints: checkpoint id to the git commit (40 or 64 hex digits) that is
/// its export, or that it was imported from (docs/design.md, "Sharing through git").
pub(super) const COMMIT_OF: TableDefinition<u128, &[u8]> = TableDefinition::new("commit_of");
/// The reverse of [`COMMIT_OF`]: git commit (hex digits) to checkpoint id.
pub(super) const CHECKPOINT_OF: TableDefinition<&[u8], u128> =
    TableDefinition::new("checkpoint_of");
/// Imported checkpoints: local id to the id the checkpoint had in the store it was
/// saved in.
pub(super) const ORIGINS: TableDefinition<u128, u128> = TableDefinition::new("origins");
/// Fetched branches, `<remote>/<branch>`, to the checkpoint their tip was imported as.
pub(super) const REMOTE_BRANCHES: TableDefinition<&str, u128> =
    TableDefinition::new("remote_branches");
/// What each checkpoint changed against its first parent ([`super::ChangeSummary`]), kept
/// at save so that `log` need not diff trees. Not part of the record (whose bytes are its
/// id); a checkpoint without a row (older stores, imports, one gc re-parented) has its
/// summary computed when needed. Made by the first save that writes one.
pub(super) const SUMMARIES: TableDefinition<u128, &[u8]> = TableDefinition::new("summaries");
/// Session id to the highest prompt number a prompt checkpoint of it has carried, so
/// that a hook numbers the next prompt without reading every record. Complete from the
/// moment it exists: the transaction that makes it fills it from every record
/// (docs/design.md, invariant 17). Rows outlive the checkpoints gc and `drop` remove,
/// so a prompt number is never given twice in one session.
pub(super) const SESSION_PROMPTS: TableDefinition<&str, u64> =
    TableDefinition::new("session_prompts");
/// Session id to what each gc that removed some of its checkpoints removed, oldest first
/// (a codec list of [`crate::model::retention::GcRemoval`]: the highest prompt number
/// removed, whether the whole session went, when), so that a turn or a session gc
/// removed says so, and when. Made by the first gc that removes a session's checkpoint.
pub(super) const GC_REMOVALS: TableDefinition<&str, &[u8]> = TableDefinition::new("gc_removals");
/// The operation log: a number that only grows to a codec
/// [`Operation`](crate::model::operation::Operation), written in the transaction of the
/// change it records. Made by the first operation.
pub(super) const OPERATIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("operations");
/// Checkpoints `drop` took out of the history, by id: the record's bytes exactly as
/// `checkpoints` held them, so that `undo` puts them back under the same id. gc keeps
/// them, and what they reach, while an operation of the undo window names them, and
/// deletes them after. Made by the first `drop`.
pub(super) const DROPPED: TableDefinition<u128, &[u8]> = TableDefinition::new("dropped");
