//! The state of `browse` and what each key does to it. Nothing here reads the store or
//! the terminal: a key gives an [`Effect`] that `terminal.rs` carries out through
//! `store.rs`, so that every view can be drawn from a state made in a test.

use std::collections::HashSet;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Text;

use git_checkpoint::CheckpointId;

/// One checkpoint as the list shows it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its id.
    pub id: CheckpointId,
    /// Its short id, as `log` shows it.
    pub short: String,
    /// When it was made (nanoseconds since the epoch).
    pub time_ns: i128,
    /// Its whole message.
    pub message: String,
    /// Its metadata (an agent's hooks record `agent`, `session`, `kind`, `prompt`).
    pub meta: Vec<(String, String)>,
    /// The labels `log` puts after it (`HEAD -> main`, …).
    pub labels: Vec<String>,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Its parents among the listed checkpoints.
    pub graph_parents: Vec<CheckpointId>,
}

impl Entry {
    /// The value of metadata `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The two kinds of fold: an agent session's run of checkpoints, and within it one
/// prompt's (the prompt's checkpoint and the tool calls after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// An agent session.
    Session,
    /// A prompt and its tool calls.
    Prompt,
}

/// A fold: a run of list entries `start..end` (the newest first) shown, when folded, as
/// its first entry alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// Which kind.
    pub level: Level,
    /// The first entry's index.
    pub start: usize,
    /// One past the last entry's index.
    pub end: usize,
}

/// Something the user asked for that changes the store or the worktree, asked to be
/// confirmed first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Make the worktree equal to the checkpoint.
    Restore {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Restore one path from the checkpoint.
    RestoreFile {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
        /// The worktree path.
        path: Vec<u8>,
    },
    /// Start a new branch at the checkpoint, as `fork` does.
    Fork {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Pin the checkpoint.
    Pin {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Remove the checkpoint, as `drop` does.
    Drop {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
}

impl Action {
    /// The question the confirmation dialog asks.
    pub fn question(&self) -> String {
        match self {
            Action::Restore { short, .. } => format!(
                "Restore the worktree to checkpoint {short}? Unsaved changes are saved first as a checkpoint."
            ),
            Action::RestoreFile { short, path, .. } => format!(
                "Restore {} from checkpoint {short}? Unsaved changes are saved first as a checkpoint.",
                git_checkpoint::format::text::escape_controls(&String::from_utf8_lossy(path))
            ),
            Action::Fork { short, .. } => format!(
                "Start a new branch at checkpoint {short} and restore it? Unsaved changes are saved first."
            ),
            Action::Pin { short, .. } => {
                format!("Pin checkpoint {short}, so that gc never removes it?")
            }
            Action::Drop { short, .. } => format!(
                "Drop checkpoint {short}? Its children are re-linked to its parents; the worktree is not touched."
            ),
        }
    }
}

/// What is on top of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only the list and the detail.
    List,
    /// The keys.
    Help,
    /// The search being typed.
    Search(String),
    /// A y/n question before an action.
    Confirm(Action),
    /// The files of the selected checkpoint, to restore one; the highlighted one.
    Files {
        /// The changed paths.
        paths: Vec<Vec<u8>>,
        /// The highlighted one.
        selected: usize,
    },
}

/// What the terminal loop must do after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Only redraw.
    None,
    /// Leave.
    Quit,
    /// Search for the text from the selection on (messages, metadata, then paths).
    Search(String),
    /// List the files of the selected checkpoint, for a file restore.
    PickFile,
    /// Carry out a confirmed action, then read the list again.
    Act(Action),
}

/// The checkpoint shown on the right.
pub struct Detail {
    /// Whose it is.
    pub id: CheckpointId,
    /// Its record and diff, as `show` prints them.
    pub text: Text<'static>,
}

/// The whole state of the UI.
pub struct App {
    entries: Vec<Entry>,
    groups: Vec<Group>,
    folded: HashSet<(Level, usize)>,
    /// The entries shown (indices into the entries), recomputed when a fold changes.
    visible: Vec<usize>,
    /// The selected row, an index into the rows shown.
    pub selected: usize,
    /// The first row drawn; kept so that the list scrolls only when the selection
    /// leaves the screen.
    pub offset: usize,
    /// The selected checkpoint's record and diff, once read.
    pub detail: Option<Detail>,
    /// How far the detail is scrolled down.
    pub detail_scroll: u16,
    /// What is open on top.
    pub mode: Mode,
    /// The last thing done, or the last error, for the status line.
    pub status: String,
    /// Whether to colour (not under `NO_COLOR`).
    pub colour: bool,
    /// The time ages are counted from.
    pub now_ns: i128,
    /// The last search, for `n`.
    pub last_search: Option<String>,
}

impl App {
    /// The UI over `entries` (in `log --all` order), every prompt folded.
    pub fn new(entries: Vec<Entry>, colour: bool, now_ns: i128) -> App {
        let mut app = App {
            entries: Vec::new(),
            groups: Vec::new(),
            folded: HashSet::new(),
            visible: Vec::new(),
            selected: 0,
            offset: 0,
            detail: None,
            detail_scroll: 0,
            mode: Mode::List,
            status: String::new(),
            colour,
            now_ns,
            last_search: None,
        };
        app.replace_entries(entries);
        app
    }

    /// Takes a fresh list (after an action), keeping the selection on the same
    /// checkpoint where it is still there.
    pub fn replace_entries(&mut self, entries: Vec<Entry>) {
        let keep = self.selected_entry().map(|e| e.id);
        self.entries = entries;
        self.groups = groups(&self.entries);
        self.folded = self
            .groups
            .iter()
            .filter(|g| g.level == Level::Prompt && g.end - g.start > 1)
            .map(|g| (g.level, g.start))
            .collect();
        self.refresh_visible();
        let index = keep.and_then(|id| self.entries.iter().position(|e| e.id == id));
        match index {
            Some(index) => self.reveal(index),
            None => self.selected = self.selected.min(self.visible.len().saturating_sub(1)),
        }
        self.detail = None;
    }

    /// Every entry.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries shown, as indices into [`App::entries`].
    pub fn visible(&self) -> &[usize] {
        &self.visible
    }

    /// The selected checkpoint.
    pub fn selected_entry(&self) -> Option<&Entry> {
        self.visible.get(self.selected).map(|&i| &self.entries[i])
    }

    /// The folded group that entry `index` stands for, if it stands for one: the
    /// outermost.
    pub fn folded_at(&self, index: usize) -> Option<Group> {
        self.groups
            .iter()
            .find(|g| g.start == index && g.end - g.start > 1 && self.is_folded(g))
            .copied()
    }

    /// The groups that hold entry `index`, the session first.
    pub fn groups_of(&self, index: usize) -> impl Iterator<Item = &Group> {
        self.groups
            .iter()
            .filter(move |g| g.start <= index && index < g.end)
    }

    fn is_folded(&self, group: &Group) -> bool {
        self.folded.contains(&(group.level, group.start))
    }

    fn refresh_visible(&mut self) {
        let hidden = |i: usize| {
            self.groups
                .iter()
                .any(|g| g.start < i && i < g.end && self.is_folded(g))
        };
        self.visible = (0..self.entries.len()).filter(|&i| !hidden(i)).collect();
    }

    /// Unfolds whatever hides entry `index` and selects it.
    pub fn reveal(&mut self, index: usize) {
        let hiding: Vec<(Level, usize)> = self
            .groups_of(index)
            .filter(|g| g.start < index)
            .map(|g| (g.level, g.start))
            .collect();
        for key in hiding {
            self.folded.remove(&key);
        }
        self.refresh_visible();
        self.selected = self.visible.iter().position(|&i| i == index).unwrap_or(0);
    }

    fn move_by(&mut self, delta: isize) {
        let last = self.visible.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
        self.detail_scroll = 0;
    }

    /// Folds the innermost open group that holds the selected entry.
    fn fold(&mut self) {
        let Some(&index) = self.visible.get(self.selected) else {
            return;
        };
        let open = self
            .groups_of(index)
            .filter(|g| g.end - g.start > 1 && !self.is_folded(g))
            .last()
            .copied();
        if let Some(group) = open {
            self.folded.insert((group.level, group.start));
            self.refresh_visible();
            self.reveal(group.start);
        }
    }

    /// Unfolds the outermost folded group the selected entry stands for.
    fn unfold(&mut self) {
        let Some(&index) = self.visible.get(self.selected) else {
            return;
        };
        if let Some(group) = self.folded_at(index) {
            self.folded.remove(&(group.level, group.start));
            self.refresh_visible();
            self.reveal(index);
        }
    }

    /// What `key` does. Ctrl-C leaves from anywhere.
    pub fn key(&mut self, key: KeyEvent) -> Effect {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Effect::Quit;
        }
        match std::mem::replace(&mut self.mode, Mode::List) {
            Mode::List => self.list_key(key),
            Mode::Help => Effect::None,
            Mode::Search(mut text) => match key.code {
                KeyCode::Enter if !text.is_empty() => {
                    self.last_search = Some(text.clone());
                    Effect::Search(text)
                }
                KeyCode::Enter | KeyCode::Esc => Effect::None,
                KeyCode::Backspace => {
                    text.pop();
                    self.mode = Mode::Search(text);
                    Effect::None
                }
                KeyCode::Char(c) => {
                    text.push(c);
                    self.mode = Mode::Search(text);
                    Effect::None
                }
                _ => {
                    self.mode = Mode::Search(text);
                    Effect::None
                }
            },
            Mode::Confirm(action) => match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => Effect::Act(action),
                _ => {
                    self.status = "Cancelled".to_string();
                    Effect::None
                }
            },
            Mode::Files {
                paths,
                mut selected,
            } => match key.code {
                KeyCode::Down | KeyCode::Char('j') => {
                    selected = (selected + 1).min(paths.len().saturating_sub(1));
                    self.mode = Mode::Files { paths, selected };
                    Effect::None
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    selected = selected.saturating_sub(1);
                    self.mode = Mode::Files { paths, selected };
                    Effect::None
                }
                KeyCode::Enter => {
                    if let (Some(entry), Some(path)) = (self.selected_entry(), paths.get(selected))
                    {
                        self.mode = Mode::Confirm(Action::RestoreFile {
                            id: entry.id,
                            short: entry.short.clone(),
                            path: path.clone(),
                        });
                    }
                    Effect::None
                }
                _ => Effect::None,
            },
        }
    }

    fn list_key(&mut self, key: KeyEvent) -> Effect {
        let page = 10;
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Effect::Quit,
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::Up | KeyCode::Char('k') => self.move_by(-1),
            KeyCode::PageDown => self.move_by(page),
            KeyCode::PageUp => self.move_by(-page),
            KeyCode::Home | KeyCode::Char('g') => self.move_by(isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.move_by(isize::MAX / 2),
            KeyCode::Left | KeyCode::Char('h') => self.fold(),
            KeyCode::Right | KeyCode::Char('l') => self.unfold(),
            KeyCode::Char(' ') | KeyCode::Tab => {
                let index = self.visible.get(self.selected).copied();
                match index.and_then(|i| self.folded_at(i)) {
                    Some(_) => self.unfold(),
                    None => self.fold(),
                }
            }
            KeyCode::Char('J') => self.detail_scroll = self.detail_scroll.saturating_add(5),
            KeyCode::Char('K') => self.detail_scroll = self.detail_scroll.saturating_sub(5),
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('/') => self.mode = Mode::Search(String::new()),
            KeyCode::Char('n') => {
                if let Some(text) = self.last_search.clone() {
                    return Effect::Search(text);
                }
            }
            KeyCode::Char('f') => return Effect::PickFile,
            KeyCode::Char(c @ ('r' | 'F' | 'p' | 'd')) => {
                if let Some(entry) = self.selected_entry() {
                    let (id, short) = (entry.id, entry.short.clone());
                    self.mode = Mode::Confirm(match c {
                        'r' => Action::Restore { id, short },
                        'F' => Action::Fork { id, short },
                        'p' => Action::Pin { id, short },
                        _ => Action::Drop { id, short },
                    });
                }
            }
            _ => {}
        }
        Effect::None
    }

    /// The entries after the selected one, wrapping round, in the order a search
    /// visits them: each one's index, id, and whether its message or metadata
    /// (`key=value`) holds `text`, ignoring case.
    pub fn search_order(&self, text: &str) -> Vec<(usize, CheckpointId, bool)> {
        let text = text.to_lowercase();
        let start = self.visible.get(self.selected).map_or(0, |&i| i + 1);
        let n = self.entries.len();
        (0..n)
            .map(|k| (start + k) % n)
            .map(|i| {
                let e = &self.entries[i];
                let found = e.message.to_lowercase().contains(&text)
                    || e.meta
                        .iter()
                        .any(|(k, v)| format!("{k}={v}").to_lowercase().contains(&text));
                (i, e.id, found)
            })
            .collect()
    }
}

/// The folds of `entries`: each run of neighbours from one agent session, and in it
/// each prompt's checkpoint with the tool calls listed above it (the ones made after
/// it, up to the next prompt).
fn groups(entries: &[Entry]) -> Vec<Group> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let Some(session) = entries[i].meta("session") else {
            i += 1;
            continue;
        };
        let start = i;
        while i < entries.len() && entries[i].meta("session") == Some(session) {
            i += 1;
        }
        out.push(Group {
            level: Level::Session,
            start,
            end: i,
        });
        // Prompt runs: up to and including each prompt's own checkpoint.
        let mut run = start;
        for (j, entry) in entries.iter().enumerate().take(i).skip(start) {
            if entry.meta("kind") == Some("prompt") {
                out.push(Group {
                    level: Level::Prompt,
                    start: run,
                    end: j + 1,
                });
                run = j + 1;
            }
        }
    }
    out
}
