//! Progress of long operations. The operations report through the [`Progress`] trait, so
//! that the library never decides whether anything is drawn; the binary hands them its
//! terminal bar only when stderr is a terminal and neither `-q` nor `--json` is given.

/// Receives the progress of an operation that goes through files in stages (a save's
/// scan, a restore's writes). Called from several threads at once.
pub trait Progress: Send + Sync + std::fmt::Debug {
    /// A stage begins: `files` files holding `bytes` bytes in all are to be gone through.
    fn begin(&self, stage: &str, files: u64, bytes: u64);
    /// More files turned up for the stage under way, `files` holding `bytes` bytes: a
    /// save finds its files as it goes, and never counts them all first.
    fn more(&self, files: u64, bytes: u64);
    /// One more file of the stage is done; it held `bytes` bytes.
    fn file_done(&self, bytes: u64);
    /// The stage is over.
    fn end(&self);
}
