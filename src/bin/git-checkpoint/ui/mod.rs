//! Everything that meets the terminal: colour, paths and times as people read them, the
//! JSON shapes, the `log --graph` lanes, diffs as git prints them, the pager and the
//! progress bar. The library returns typed reports; this turns them into output, and
//! says each answer the CLI and the MCP server share once, for both (`answer`).

pub mod agent_label;
pub mod answer;
pub mod failure;
pub mod graph;
pub mod json;
pub mod output;
pub mod pager;
pub mod patch;
pub mod progress_bar;
