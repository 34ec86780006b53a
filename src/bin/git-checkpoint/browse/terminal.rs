//! The terminal side of `browse`: ratatui's set-up (raw mode, the alternate screen, and
//! a panic hook that puts the terminal back before the panic is reported), the loop
//! that draws and reads keys, and the restoration on the way out, whatever the way.

use ansi_to_tui::IntoText;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::DefaultTerminal;

use git_checkpoint::format::text::escape_controls;

use super::app::{App, Detail, Effect, Mode};
use super::{store, view};
use crate::commands::Context;

/// How many checkpoints are read at a time: a screenful or more of rows, even with
/// prompts folded, for a few milliseconds of reading.
const PAGE: usize = 200;

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
    let result = event_loop(context, &mut terminal, &mut app, &mut lister);
    let shown = terminal.show_cursor();
    ratatui::try_restore()?;
    shown?;
    result
}

fn event_loop(
    context: &Context,
    terminal: &mut DefaultTerminal,
    app: &mut App,
    lister: &mut store::Lister,
) -> anyhow::Result<()> {
    loop {
        // Enough of the list read for the screen (and the next one) from the selection.
        let rows = usize::from(terminal.size()?.height);
        while app.wants_more(2 * rows) && read_more(context, app, lister, PAGE) {}
        load_detail(context, app);
        terminal.draw(|frame| view::draw(frame, app))?;
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
            if !read_more(context, app, lister, n) {
                break;
            }
            effect = app.key(key);
        }
        match effect {
            Effect::None | Effect::More { .. } => {}
            Effect::Quit => return Ok(()),
            Effect::Search(text) => search(context, app, lister, &text),
            Effect::PickFile => pick_file(context, app),
            Effect::Act(action) => {
                app.status = match store::act(context, &action) {
                    Ok(line) => line,
                    Err(error) => failed(&error),
                };
                if let Err(error) = reload(context, app, lister) {
                    app.status = failed(&error);
                }
            }
        }
    }
}

/// Reads the next `n` checkpoints of the list into `app`; false when there were none
/// to read, or the read failed (said on the status line).
fn read_more(context: &Context, app: &mut App, lister: &mut store::Lister, n: usize) -> bool {
    if lister.done() {
        return false;
    }
    match lister.page(context, n) {
        Ok(entries) => {
            app.append(entries, !lister.done());
            true
        }
        Err(error) => {
            app.status = failed(&error);
            false
        }
    }
}

/// Reads the list again from the top after an action, as far as the selected
/// checkpoint (or as far as before, and a page), so that the selection and the folds
/// stay where they were.
fn reload(context: &Context, app: &mut App, lister: &mut store::Lister) -> anyhow::Result<()> {
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
    *lister = fresh;
    app.total = total;
    app.replace_entries(entries, !lister.done());
    Ok(())
}

/// An error as the status line shows it: one line, as the CLI prints it.
fn failed(error: &anyhow::Error) -> String {
    format!("error: {}", escape_controls(&format!("{error:#}")))
}

/// Reads the selected checkpoint's record and diff, unless already shown.
fn load_detail(context: &Context, app: &mut App) {
    let Some(id) = app.selected_entry().map(|e| e.id) else {
        return;
    };
    if app.detail.as_ref().is_some_and(|d| d.id == id) {
        return;
    }
    let text = match store::detail(context, id, app.colour) {
        // Tabs would leave cells unpainted; a terminal would show them as up to 8 spaces.
        Ok(bytes) => String::from_utf8_lossy(&bytes).replace('\t', "    "),
        Err(error) => failed(&error),
    };
    let text = text
        .as_bytes()
        .into_text()
        .unwrap_or_else(|_| ratatui::text::Text::raw(text.clone()));
    app.detail = Some(Detail { id, text });
}

/// Searches from the entry after the selection to the end of the list, reading more
/// of it as the search goes, then from the top round to the selection.
fn search(context: &Context, app: &mut App, lister: &mut store::Lister, text: &str) {
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
        if !read_more(context, app, lister, PAGE) {
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

fn pick_file(context: &Context, app: &mut App) {
    let Some(id) = app.selected_entry().map(|e| e.id) else {
        return;
    };
    match store::changed_paths(context, id) {
        Ok(paths) if paths.is_empty() => {
            app.status = "This checkpoint changed no file; r restores the whole tree".to_string()
        }
        Ok(paths) => app.mode = Mode::Files { paths, selected: 0 },
        Err(error) => app.status = failed(&error),
    }
}
