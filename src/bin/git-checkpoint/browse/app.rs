//! The state of `browse` and what each key does to it. Nothing here reads the store or
//! the terminal: a key gives an [`Effect`] that `terminal.rs` carries out through
//! `store.rs`, so that every view can be drawn from a state made in a test.

use std::collections::HashSet;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Text};

use git_checkpoint::CheckpointId;

use super::action::Action;
use super::entries::{groups, settled, Entry, Group, Level};

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
    /// The files of the selected checkpoint (or folded prompt's turn), to restore or
    /// revert one; the highlighted one.
    Files {
        /// The changed paths.
        paths: Vec<Vec<u8>>,
        /// The highlighted one.
        selected: usize,
        /// What the chosen one is for.
        purpose: FilePurpose,
    },
}

/// What a file chosen in the list of a checkpoint's files is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilePurpose {
    /// `f`: restore it from the selected checkpoint.
    Restore,
    /// `x`: undo its change in the selected step, or in a folded prompt's turn.
    Revert,
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
    /// List the files of the selected checkpoint, for a file restore, or of the
    /// selected step or turn, for a file revert.
    PickFile(FilePurpose),
    /// Carry out a confirmed action, then read the list again.
    Act(Action),
    /// Read more of the list (all of it, with `all`), then give the same key again:
    /// the key needs checkpoints not read yet (the end of the list, the end of a
    /// session to fold).
    More {
        /// Read to the end.
        all: bool,
    },
    /// Read the list again from the store (checkpoints saved meanwhile).
    Reload,
    /// Ask to undo the newest operation, named as the operation log has it.
    AskUndo,
}

/// What the detail shows for the selected row: one checkpoint's change, or a prompt's
/// whole turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The checkpoint whose record is shown: the row's own, or the turn's prompt.
    pub id: CheckpointId,
    /// For a turn, its last checkpoint: the changes shown are from `id` to it, as
    /// `show <session>:turn<N>` shows them; else they are against `id`'s first parent.
    pub turn_end: Option<CheckpointId>,
}

/// A change to revert: one step (a checkpoint against its first parent), or a prompt's
/// whole turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The revision `revert` is given, as the list shows it (see [`Action::Revert`]).
    pub rev: String,
    /// How many tool calls the turn holds, when it is a turn.
    pub turn: Option<usize>,
}

/// How far the detail is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Made {
    /// Still being made: what is shown is what is made so far.
    Building,
    /// All of it.
    Whole,
    /// Cut at its first lines (it goes on; `show` prints all of it).
    Cut,
    /// Making it failed; its text ends with the error.
    Failed,
}

/// The record and diff shown on the right.
pub struct Detail {
    /// What it shows.
    pub target: Target,
    /// Its record and diff, as `show` prints them, as far as they are made.
    pub text: Text<'static>,
    /// How far that is.
    pub made: Made,
    /// Which line is the record's `Date:` line, whose age is drawn counted from the
    /// time the screen is drawn, as the list's ages are, not from when it was made.
    pub date_line: Option<usize>,
}

impl Detail {
    /// A detail of `target` whose making has just started: nothing made yet.
    pub fn building(target: Target) -> Detail {
        Detail {
            target,
            text: Text::default(),
            made: Made::Building,
            date_line: None,
        }
    }

    /// Adds `lines`, the next of the text made; the first piece holds the record,
    /// where the `Date:` line is looked for.
    pub fn extend(&mut self, lines: Vec<Line<'static>>) {
        let first = self.text.lines.len();
        self.text.lines.extend(lines);
        if first == 0 {
            self.date_line = self.text.lines.iter().position(|line| {
                line.spans
                    .first()
                    .is_some_and(|span| span.content.starts_with("Date:"))
            });
        }
    }
}

/// A fold as the user left it, by the id of its last (oldest) entry: a prompt's own
/// checkpoint, a session's first. Ids, not positions, so that a fold stays as it was
/// when the list is read again after an action, or grows as more of it is read.
type FoldKey = (Level, CheckpointId);

/// The whole state of the UI.
pub struct App {
    entries: Vec<Entry>,
    /// Whether the store holds more checkpoints after the entries read so far.
    more: bool,
    /// How many checkpoints the store holds, for the list's title.
    pub total: u64,
    /// The entries whose rows are final: all of them, or, while more are to be read,
    /// those before a trailing run of a session whose next prompt is not read yet.
    settled: usize,
    groups: Vec<Group>,
    /// The folds that are folded.
    folded: HashSet<FoldKey>,
    /// Every fold seen so far; one not seen before starts as its kind does (a prompt
    /// folded, a session open).
    seen: HashSet<FoldKey>,
    /// The entries shown (indices into the entries), recomputed when a fold changes.
    visible: Vec<usize>,
    /// The selected row, an index into the rows shown.
    pub selected: usize,
    /// The first row drawn; kept so that the list scrolls only when the selection
    /// leaves the screen.
    pub offset: usize,
    /// The selected row's record and diff, as far as they are made.
    pub detail: Option<Detail>,
    /// How far the detail is scrolled down.
    pub detail_scroll: u16,
    /// What is open on top.
    pub mode: Mode,
    /// The last thing done, or the last error, for the status line.
    pub status: String,
    /// Whether to colour (not under `NO_COLOR`).
    pub colour: bool,
    /// The time ages are counted from: the time the screen is drawn.
    pub now_ns: i128,
    /// The list pane's width: as wide as the widest row drawn so far needs, within the
    /// share of the terminal the list may take (see `view::draw`).
    pub list_width: u16,
    /// The last search, for `n`.
    pub last_search: Option<String>,
}

impl App {
    /// The UI over `entries` (the first of the list, in `log --all` order; `more` if
    /// the store holds more), every prompt folded.
    pub fn new(entries: Vec<Entry>, more: bool, colour: bool, now_ns: i128) -> App {
        let mut app = App {
            entries: Vec::new(),
            more,
            total: entries.len() as u64,
            settled: 0,
            groups: Vec::new(),
            folded: HashSet::new(),
            seen: HashSet::new(),
            visible: Vec::new(),
            selected: 0,
            offset: 0,
            detail: None,
            detail_scroll: 0,
            mode: Mode::List,
            status: String::new(),
            colour,
            now_ns,
            list_width: 0,
            last_search: None,
        };
        app.replace_entries(entries, more);
        app
    }

    /// Takes a fresh list (after an action): the selection stays on the same
    /// checkpoint and the folds as the user left them, where they are still there.
    pub fn replace_entries(&mut self, entries: Vec<Entry>, more: bool) {
        let keep = self.selected_entry().map(|e| e.id);
        self.entries = entries;
        self.more = more;
        self.regroup(keep);
        self.detail = None;
    }

    /// Appends the next entries of the list (`more` if there are more still).
    pub fn append(&mut self, entries: Vec<Entry>, more: bool) {
        let keep = self.selected_entry().map(|e| e.id);
        self.entries.extend(entries);
        self.more = more;
        self.regroup(keep);
    }

    fn regroup(&mut self, keep: Option<CheckpointId>) {
        self.groups = groups(&self.entries);
        self.settled = settled(&self.entries, self.more);
        for g in &self.groups {
            if !self.complete(g) {
                continue;
            }
            let key = (g.level, self.entries[g.end - 1].id);
            if self.seen.insert(key) && g.level == Level::Prompt && g.end - g.start > 1 {
                self.folded.insert(key);
            }
        }
        self.refresh_visible();
        let index = keep.and_then(|id| self.entries.iter().position(|e| e.id == id));
        match index {
            Some(index) if index < self.settled => self.reveal(index),
            _ => self.selected = self.selected.min(self.visible.len().saturating_sub(1)),
        }
    }

    /// Whether `group` is all read: a prompt's run ends with the prompt; a session's
    /// run, when something follows it, or the list is all read.
    fn complete(&self, group: &Group) -> bool {
        group.level == Level::Prompt || !self.more || group.end < self.entries.len()
    }

    /// Every entry read so far.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// How many of the entries have final rows (see [`App::visible`]).
    pub fn settled(&self) -> usize {
        self.settled
    }

    /// The entries shown, as indices into [`App::entries`]: those not folded away,
    /// among the settled ones.
    pub fn visible(&self) -> &[usize] {
        &self.visible
    }

    /// The selected checkpoint.
    pub fn selected_entry(&self) -> Option<&Entry> {
        self.visible.get(self.selected).map(|&i| &self.entries[i])
    }

    /// What the detail shows for the selected row: a folded prompt's whole turn (from
    /// the prompt's checkpoint to its last tool call, the row's own), else the row's
    /// checkpoint.
    pub fn detail_target(&self) -> Option<Target> {
        let &index = self.visible.get(self.selected)?;
        let entry = &self.entries[index];
        Some(match self.folded_prompt(index) {
            Some(prompt) => Target {
                id: prompt.id,
                turn_end: Some(entry.id),
            },
            None => Target {
                id: entry.id,
                turn_end: None,
            },
        })
    }

    /// The prompt's own checkpoint, when entry `index` stands for a folded prompt's
    /// turn.
    fn folded_prompt(&self, index: usize) -> Option<&Entry> {
        self.folded_at(index)
            .filter(|group| group.level == Level::Prompt)
            .map(|group| &self.entries[group.end - 1])
    }

    /// The short id of listed checkpoint `id`.
    pub fn short_of(&self, id: CheckpointId) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.id == id)
            .map(|e| e.short.as_str())
    }

    /// Whether the rows from the selection's screen on (`rows` past the first row drawn
    /// or the selection) are all read: else the list wants more.
    pub fn wants_more(&self, rows: usize) -> bool {
        self.more && self.visible.len() <= self.offset.max(self.selected) + rows
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
        self.complete(group)
            && self
                .folded
                .contains(&(group.level, self.entries[group.end - 1].id))
    }

    fn refresh_visible(&mut self) {
        // Marked group by group, so that a long list with many folds costs its length.
        let mut hidden = vec![false; self.settled];
        for g in self.groups.iter().filter(|g| self.is_folded(g)) {
            for slot in hidden.iter_mut().take(g.end).skip(g.start + 1) {
                *slot = true;
            }
        }
        self.visible = (0..self.settled).filter(|&i| !hidden[i]).collect();
    }

    /// Unfolds whatever hides entry `index` and selects it.
    pub fn reveal(&mut self, index: usize) {
        let hiding: Vec<FoldKey> = self
            .groups_of(index)
            .filter(|g| g.start < index)
            .map(|g| (g.level, self.entries[g.end - 1].id))
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

    /// Folds the innermost open group that holds the selected entry; a session not
    /// read to its end yet asks for more first.
    fn fold(&mut self) -> Effect {
        let Some(&index) = self.visible.get(self.selected) else {
            return Effect::None;
        };
        let open = self
            .groups_of(index)
            .filter(|g| g.end - g.start > 1 && !self.is_folded(g))
            .last()
            .copied();
        if let Some(group) = open {
            if !self.complete(&group) {
                return Effect::More { all: false };
            }
            self.folded
                .insert((group.level, self.entries[group.end - 1].id));
            self.refresh_visible();
            self.reveal(group.start);
        }
        Effect::None
    }

    /// Unfolds the outermost folded group the selected entry stands for.
    fn unfold(&mut self) {
        let Some(&index) = self.visible.get(self.selected) else {
            return;
        };
        if let Some(group) = self.folded_at(index) {
            self.folded
                .remove(&(group.level, self.entries[group.end - 1].id));
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
                purpose,
            } => match key.code {
                KeyCode::Down | KeyCode::Char('j') => {
                    selected = (selected + 1).min(paths.len().saturating_sub(1));
                    self.mode = Mode::Files {
                        paths,
                        selected,
                        purpose,
                    };
                    Effect::None
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    selected = selected.saturating_sub(1);
                    self.mode = Mode::Files {
                        paths,
                        selected,
                        purpose,
                    };
                    Effect::None
                }
                KeyCode::Enter => {
                    if let Some(path) = paths.get(selected) {
                        self.ask_about_file(purpose, path.clone());
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
            KeyCode::End | KeyCode::Char('G') if self.more => return Effect::More { all: true },
            KeyCode::End | KeyCode::Char('G') => self.move_by(isize::MAX / 2),
            KeyCode::Left | KeyCode::Char('h') => return self.fold(),
            KeyCode::Right | KeyCode::Char('l') => self.unfold(),
            KeyCode::Char(' ') | KeyCode::Tab => {
                let index = self.visible.get(self.selected).copied();
                match index.and_then(|i| self.folded_at(i)) {
                    Some(_) => self.unfold(),
                    None => return self.fold(),
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
            KeyCode::Char('f') => return Effect::PickFile(FilePurpose::Restore),
            KeyCode::Char('x') => return Effect::PickFile(FilePurpose::Revert),
            KeyCode::Char('R') => return Effect::Reload,
            KeyCode::Char('s') => self.ask_session_restore(),
            KeyCode::Char('u') => self.ask_revert(),
            KeyCode::Char('U') => return Effect::AskUndo,
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

    /// `s`: asks to put back the files the selected checkpoint's session changed since
    /// it; a checkpoint no session saved has no session to ask about.
    fn ask_session_restore(&mut self) {
        let Some(entry) = self.selected_entry() else {
            return;
        };
        match entry.meta("session") {
            Some(session) => {
                self.mode = Mode::Confirm(Action::RestoreSession {
                    id: entry.id,
                    short: entry.short.clone(),
                    session: session.to_string(),
                })
            }
            None => {
                self.status = format!(
                    "Checkpoint {} was not saved by an agent session: s restores a session's files, r the whole worktree",
                    entry.short
                )
            }
        }
    }

    /// `u`: asks to revert the selected step, or, on a folded prompt, the prompt's
    /// whole turn.
    fn ask_revert(&mut self) {
        if let Some(Change { rev, turn }) = self.selected_change() {
            self.mode = Mode::Confirm(Action::Revert { rev, turn });
        }
    }

    /// The change `u` and `x` revert: the selected step, or, on a folded prompt, the
    /// prompt's whole turn (from the prompt's checkpoint to its last tool call).
    pub fn selected_change(&self) -> Option<Change> {
        let &index = self.visible.get(self.selected)?;
        let entry = &self.entries[index];
        Some(match self.folded_at(index) {
            Some(group) if group.level == Level::Prompt => {
                let prompt = &self.entries[group.end - 1];
                Change {
                    rev: format!("{}..{}", prompt.short, entry.short),
                    turn: Some(group.end - group.start - 1),
                }
            }
            _ => Change {
                rev: entry.short.clone(),
                turn: None,
            },
        })
    }

    /// Enter in the list of files: asks to restore `path` from the selected checkpoint,
    /// or to revert its change in the selected step or turn.
    fn ask_about_file(&mut self, purpose: FilePurpose, path: Vec<u8>) {
        let action = match purpose {
            FilePurpose::Restore => self.selected_entry().map(|entry| Action::RestoreFile {
                id: entry.id,
                short: entry.short.clone(),
                path,
            }),
            FilePurpose::Revert => self
                .selected_change()
                .map(|Change { rev, .. }| Action::RevertFile { rev, path }),
        };
        if let Some(action) = action {
            self.mode = Mode::Confirm(action);
        }
    }

    /// The settled entries in `range`, in the order a search visits them: each one's
    /// index, id, and whether its message or metadata (`key=value`) holds `text`,
    /// ignoring case.
    pub fn search_order(
        &self,
        text: &str,
        range: std::ops::Range<usize>,
    ) -> Vec<(usize, CheckpointId, bool)> {
        let text = text.to_lowercase();
        range
            .filter(|&i| i < self.settled)
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

    /// Where a search starts: the entry after the selected one.
    pub fn search_start(&self) -> usize {
        self.visible.get(self.selected).map_or(0, |&i| i + 1)
    }
}
