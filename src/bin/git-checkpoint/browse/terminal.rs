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

/// Runs the UI until the user quits. The list is read before the terminal is taken, so
/// an error reading it is printed as any command's.
pub fn run(context: &Context, colour: bool) -> anyhow::Result<()> {
    let entries = store::load(context)?;
    let mut app = App::new(entries, colour, git_checkpoint::clock::now_ns());
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
    let result = event_loop(context, &mut terminal, &mut app);
    let shown = terminal.show_cursor();
    ratatui::try_restore()?;
    shown?;
    result
}

fn event_loop(
    context: &Context,
    terminal: &mut DefaultTerminal,
    app: &mut App,
) -> anyhow::Result<()> {
    loop {
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
        match app.key(key) {
            Effect::None => {}
            Effect::Quit => return Ok(()),
            Effect::Search(text) => search(context, app, &text),
            Effect::PickFile => pick_file(context, app),
            Effect::Act(action) => {
                app.status = match store::act(context, &action) {
                    Ok(line) => line,
                    Err(error) => failed(&error),
                };
                match store::load(context) {
                    Ok(entries) => app.replace_entries(entries),
                    Err(error) => app.status = failed(&error),
                }
            }
        }
    }
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

fn search(context: &Context, app: &mut App, text: &str) {
    let candidates = app.search_order(text);
    match store::find(context, &candidates, text) {
        Ok(Some(index)) => {
            app.reveal(index);
            app.detail_scroll = 0;
            app.status = format!("Found '{}' (n: next)", escape_controls(text));
        }
        Ok(None) => app.status = format!("No checkpoint matches '{}'", escape_controls(text)),
        Err(error) => app.status = failed(&error),
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
