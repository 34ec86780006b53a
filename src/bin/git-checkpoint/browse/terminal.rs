//! The terminal side of `browse`: ratatui's set-up (raw mode, the alternate screen, and
//! a panic hook that puts the terminal back before the panic is reported), the loop
//! that draws, reads keys and takes in the detail as `detail.rs` makes it, and the
//! restoration on the way out, whatever the way.

use std::time::Duration;

use ansi_to_tui::IntoText;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::text::Line;
use ratatui::DefaultTerminal;

use git_checkpoint::text::escape_controls;

use super::app::{App, Detail, Effect, FilePurpose, Made, Mode};
use super::detail::{self, Ending, Piece};
use super::{store, view};
use crate::commands::Context;

/// How many checkpoints are read at a time: a screenful or more of rows, even with
/// prompts folded, for a few milliseconds of reading.
const PAGE: usize = 200;

/// How often the screen is drawn again while nothing happens, so that ages move on.
const TICK: Duration = Duration::from_secs(1);

/// How soon the screen is drawn again while the detail is being made, so that its
/// pieces show as they come.
const BUSY_TICK: Duration = Duration::from_millis(30);

/// Runs the UI until the user quits. The first page of the list is read before the
/// terminal is taken, so an error reading it is printed as any command's.
pub fn run(context: &Context, colour: bool) -> anyhow::Result<()> {
    let (mut lister, total) = store::Lister::start(context)?;
    let first = lister.page(context, PAGE)?;
    let mut app = App::new(
        first,
        !lister.done(),
        colour,
        git_checkpoint::clock::now_ns(),
    );
    app.total = total;
    let mut reader = Reader {
        context,
        lister,
        builder: detail::Builder::start(context)?,
    };
    // ratatui's restoration leaves the cursor as drawing left it (hidden); a panic ends
    // the process in the binary's hook, before the terminal is dropped, so the cursor is
    // shown here first.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), ratatui::crossterm::cursor::Show);
        report(info);
    }));
    // Raw mode and the alternate screen; the panic hook it installs restores both before
    // the one above and the binary's own hook report the panic.
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app, &mut reader);
    let shown = terminal.show_cursor();
    ratatui::try_restore()?;
    shown?;
    result
}

/// What the UI reads the store through: the list, read a page at a time, and the
/// builder of the detail, which reads on its own thread.
struct Reader<'a> {
    context: &'a Context,
    lister: store::Lister,
    builder: detail::Builder,
}

impl Reader<'_> {
    /// Readies the store for a read or an action of the UI's own: the detail's build
    /// under way is cancelled and waited for (the detail is made again after).
    fn quiet(&mut self, app: &mut App) {
        if self.builder.pause() {
            app.detail = None;
        }
    }
}

/// Draws, waits for a key (drawing again at each tick, and as the detail's pieces come),
/// and does what the key says. Keys are read while the detail is made; an action or a
/// read of the store runs on this thread, and keys typed meanwhile wait for it, in order.
fn event_loop(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    reader: &mut Reader<'_>,
) -> anyhow::Result<()> {
    loop {
        // Enough of the list read for the screen (and the next one) from the selection.
        let rows = usize::from(terminal.size()?.height);
        while app.wants_more(2 * rows) && read_more(reader, app, PAGE) {}
        follow_selection(reader, app);
        take_pieces(reader, app);
        app.now_ns = git_checkpoint::clock::now_ns();
        terminal.draw(|frame| view::draw(frame, app))?;
        let tick = if reader.builder.busy() {
            BUSY_TICK
        } else {
            TICK
        };
        if !event::poll(tick)? {
            continue;
        }
        // A resize is an event too: the loop draws again at the new size.
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        git_checkpoint::fault::point("browse-key");
        let mut effect = app.key(key);
        while let Effect::More { all } = effect {
            let n = if all { usize::MAX } else { PAGE };
            if !read_more(reader, app, n) {
                break;
            }
            effect = app.key(key);
        }
        match effect {
            Effect::None | Effect::More { .. } => {}
            Effect::Quit => return Ok(()),
            Effect::Search(text) => search(reader, app, &text),
            Effect::PickFile(purpose) => pick_file(reader, app, purpose),
            Effect::AskUndo => ask_undo(reader, app),
            Effect::Reload => {
                reader.quiet(app);
                if let Err(error) = reload(reader, app) {
                    app.status = failed(&error);
                }
            }
            Effect::Act(action) => {
                reader.quiet(app);
                app.status = action.doing();
                terminal.draw(|frame| view::draw(frame, app))?;
                app.status = match store::act(reader.context, &action) {
                    Ok(line) => line,
                    Err(error) => failed(&error),
                };
                if let Err(error) = reload(reader, app) {
                    app.status = failed(&error);
                }
            }
        }
    }
}

/// Starts making the selected row's detail, unless it is shown or being made already.
fn follow_selection(reader: &mut Reader<'_>, app: &mut App) {
    let Some(target) = app.detail_target() else {
        return;
    };
    if app.detail.as_ref().is_some_and(|d| d.target == target) {
        return;
    }
    reader.builder.build(target, app.colour);
    app.detail = Some(Detail::building(target));
    app.detail_scroll = 0;
}

/// Adds to the detail what the builder made of it since the last look.
fn take_pieces(reader: &mut Reader<'_>, app: &mut App) {
    for piece in reader.builder.received() {
        let Some(detail) = app.detail.as_mut() else {
            continue;
        };
        match piece {
            Piece::Text(bytes) => detail.extend(lines_of(&bytes)),
            Piece::Done(Ending::Whole) => detail.made = Made::Whole,
            Piece::Done(Ending::Cut) => detail.made = Made::Cut,
            Piece::Done(Ending::Failed(error)) => {
                detail.text.lines.push(Line::raw(failed(&error)));
                detail.made = Made::Failed;
            }
            // Only the UI's own reads cancel the build it asked for last, and they
            // drop its detail, to be made again.
            Piece::Done(Ending::Cancelled) => app.detail = None,
        }
    }
}

/// The lines of a piece of `show`'s text, its colours kept.
fn lines_of(bytes: &[u8]) -> Vec<Line<'static>> {
    // Tabs would leave cells unpainted; a terminal would show them as up to 8 spaces.
    let text = String::from_utf8_lossy(bytes).replace('\t', "    ");
    match text.as_bytes().into_text() {
        Ok(text) => text.lines,
        Err(_) => text.lines().map(|l| Line::raw(l.to_string())).collect(),
    }
}

/// Reads the next `n` checkpoints of the list into `app`; false when there were none
/// to read, or the read failed (said on the status line).
fn read_more(reader: &mut Reader<'_>, app: &mut App, n: usize) -> bool {
    if reader.lister.done() {
        return false;
    }
    reader.quiet(app);
    match reader.lister.page(reader.context, n) {
        Ok(entries) => {
            app.append(entries, !reader.lister.done());
            true
        }
        Err(error) => {
            app.status = failed(&error);
            false
        }
    }
}

/// Reads the list again from the top (after an action, or for R), as far as the
/// selected checkpoint (or as far as before, and a page), so that the selection and the
/// folds stay where they were.
fn reload(reader: &mut Reader<'_>, app: &mut App) -> anyhow::Result<()> {
    let context = reader.context;
    let keep = app.selected_entry().map(|e| e.id);
    let before = app.entries().len();
    let (mut fresh, total) = store::Lister::start(context)?;
    let mut entries = fresh.page(context, PAGE)?;
    while !fresh.done()
        && entries.len() < before + PAGE
        && !keep.is_some_and(|id| entries.iter().any(|e| e.id == id))
    {
        entries.extend(fresh.page(context, PAGE)?);
    }
    reader.lister = fresh;
    app.total = total;
    app.replace_entries(entries, !reader.lister.done());
    Ok(())
}

/// An error as the status line shows it: one line, as the CLI prints it.
fn failed(error: &anyhow::Error) -> String {
    format!("error: {}", escape_controls(&format!("{error:#}")))
}

/// Searches from the entry after the selection to the end of the list, reading more
/// of it as the search goes, then from the top round to the selection.
fn search(reader: &mut Reader<'_>, app: &mut App, text: &str) {
    reader.quiet(app);
    let context = reader.context;
    let start = app.search_start();
    let mut from = start;
    let found = loop {
        let candidates = app.search_order(text, from..app.settled());
        from = from.max(app.settled());
        match store::find(context, &candidates, text) {
            Ok(Some(index)) => break Some(index),
            Ok(None) => {}
            Err(error) => {
                app.status = failed(&error);
                return;
            }
        }
        if !read_more(reader, app, PAGE) {
            let candidates = app.search_order(text, 0..start);
            match store::find(context, &candidates, text) {
                Ok(found) => break found,
                Err(error) => {
                    app.status = failed(&error);
                    return;
                }
            }
        }
    };
    match found {
        Some(index) => {
            app.reveal(index);
            app.detail_scroll = 0;
            app.status = format!("Found '{}' (n: next)", escape_controls(text));
        }
        None => app.status = format!("No checkpoint matches '{}'", escape_controls(text)),
    }
}

/// `U`: asks to undo the operation `undo` would undo now, naming it; says so when
/// there is none.
fn ask_undo(reader: &mut Reader<'_>, app: &mut App) {
    reader.quiet(app);
    match store::next_undo(reader.context) {
        Ok(action) => app.mode = Mode::Confirm(action),
        Err(error) => app.status = failed(&error),
    }
}

/// `f` and `x`: lists the files the selected checkpoint changed (for `x`, the selected
/// step or folded prompt's turn), to choose one.
fn pick_file(reader: &mut Reader<'_>, app: &mut App, purpose: FilePurpose) {
    let listed = match purpose {
        FilePurpose::Restore => {
            let Some(id) = app.selected_entry().map(|e| e.id) else {
                return;
            };
            reader.quiet(app);
            store::changed_paths(reader.context, id)
        }
        FilePurpose::Revert => {
            let Some(change) = app.selected_change() else {
                return;
            };
            reader.quiet(app);
            store::change_paths(reader.context, &change.rev)
        }
    };
    match listed {
        Ok(paths) if paths.is_empty() => {
            app.status = match purpose {
                FilePurpose::Restore => {
                    "This checkpoint changed no file; r restores the whole tree"
                }
                FilePurpose::Revert => "This step changed no file: there is nothing to revert",
            }
            .to_string()
        }
        Ok(paths) => {
            app.mode = Mode::Files {
                paths,
                selected: 0,
                purpose,
            }
        }
        Err(error) => app.status = failed(&error),
    }
}
