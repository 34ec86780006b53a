//! One answer, two front ends. Each operation both the CLI and the MCP server offer
//! (save, restore, revert, pin, undo and redo, and the listings) makes one typed answer: the
//! library's report, with the short ids it names read while the store was open. The
//! answer says itself here, once: as lines ([`Answer::said`]) and as its `--json` shape
//! ([`Answer::json`], a type of [`crate::ui::json`]). The CLI command prints it
//! (`Context::tell`) and the MCP tool forwards it, text and structured content; the two
//! differ only in what [`Front`] says: how a command is named to the reader.

pub mod checkpoints;
pub mod diff;
pub mod operations;
pub mod pin;
pub mod restore;
pub mod revert;
pub mod save;
pub mod sessions;
pub mod show;

use std::collections::BTreeMap;

use git_checkpoint::text::escape_controls;
use git_checkpoint::CheckpointId;
use serde::Serialize;

/// Who reads an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    /// A person or a script at the command line; `colour` when stdout is a terminal
    /// that wants it.
    Cli {
        /// Whether diffs are coloured.
        colour: bool,
    },
    /// A model, through the MCP server: commands are its tools and their arguments,
    /// and nothing is coloured.
    Mcp,
}

impl Front {
    /// How this reader runs command `name` as it is, without arguments:
    /// `git checkpoint <name>`, or the tool `<name>`.
    pub fn command(self, name: &str) -> String {
        match self {
            Front::Cli { .. } => format!("git checkpoint {name}"),
            Front::Mcp => name.to_string(),
        }
    }

    /// How this reader turns on the option `name` of the command at hand: `--name`, or
    /// the tool's `name=true`.
    pub fn option(self, name: &str) -> String {
        match self {
            Front::Cli { .. } => format!("--{}", name.replace('_', "-")),
            Front::Mcp => format!("{name}=true"),
        }
    }

    /// Whether diffs are coloured.
    pub fn colour(self) -> bool {
        matches!(self, Front::Cli { colour: true })
    }
}

/// One piece of what an answer says, in the order it says it.
#[derive(Debug, PartialEq, Eq)]
pub enum Part {
    /// A line of the answer (the CLI's stdout), escaped when it is said.
    Line(String),
    /// Something to know beside the answer (the CLI's stderr, after `warning: `).
    Warning(String),
    /// Bytes said as they are, already in their final form: a diff.
    Raw(Vec<u8>),
}

/// What an answer says, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Said(pub Vec<Part>);

impl Said {
    /// Adds a line.
    pub fn line(&mut self, line: impl Into<String>) {
        self.0.push(Part::Line(line.into()));
    }

    /// Adds a warning.
    pub fn warning(&mut self, warning: impl std::fmt::Display) {
        self.0.push(Part::Warning(warning.to_string()));
    }

    /// Adds bytes said as they are; nothing when there are none.
    pub fn raw(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.0.push(Part::Raw(bytes));
        }
    }

    /// The whole as one text, as the MCP server answers it: what the CLI prints, its
    /// warnings in their place. Each line and warning is escaped as the CLI's `say` and
    /// `warn` escape them ([`escape_controls`]: a name or message from a file, a person
    /// or an agent cannot break a line, forge one, or carry a control or bidi character
    /// to the reader), the raw parts are as they are, and the last line has no line
    /// break after it.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for part in &self.0 {
            match part {
                Part::Line(line) => text += &format!("{}\n", escape_controls(line)),
                Part::Warning(warning) => {
                    text += &format!("warning: {}\n", escape_controls(warning))
                }
                Part::Raw(bytes) => text += &String::from_utf8_lossy(bytes),
            }
        }
        if matches!(self.0.last(), Some(Part::Line(_) | Part::Warning(_))) {
            text.pop();
        }
        text
    }
}

/// An operation's answer, as both front ends say it.
pub trait Answer {
    /// Its `--json` document, which the MCP tool answers as structured content.
    type Json: Serialize;

    /// Its `--json` document.
    fn json(&self) -> Self::Json;

    /// What it says to `front`, warnings included.
    fn said(&self, front: Front) -> anyhow::Result<Said>;

    /// The error the operation ends with although it did its work (a revert that left
    /// conflicts): the CLI exits with it after saying the answer, the MCP tool answers
    /// as a tool error with the whole answer and this error's line.
    fn failure(&self, _front: Front) -> Option<anyhow::Error> {
        None
    }
}

/// The shortest unique abbreviations of the checkpoints an answer names, read while the
/// store was open (a snapshot lives no longer).
#[derive(Debug, Default)]
pub struct Shorts(pub BTreeMap<CheckpointId, String>);

impl Shorts {
    /// The abbreviation of `id`; its full id if it was not read (which the code that
    /// makes each answer rules out).
    pub fn of(&self, id: CheckpointId) -> String {
        self.0.get(&id).cloned().unwrap_or_else(|| id.hex())
    }
}
