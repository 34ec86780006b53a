//! Draws `browse`: the list with its graph on the left, the selected checkpoint's
//! record and diff on the right, a status line, and the dialog open on top. Rows are
//! made with the same helpers as `log` (labels, ages, the graph's lanes) as coloured
//! text, and shown through `ansi-to-tui`, as the detail is (`show`'s own text).

use std::collections::HashMap;

use ansi_to_tui::IntoText;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use git_checkpoint::format::text::escape_controls;
use git_checkpoint::CheckpointId;

use super::app::{App, Entry, Level, Mode};
use crate::ui::graph;
use crate::ui::output::{format_labels, paint, relative_time, show_path, style};

/// The keys, as `?` lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("j / Down, k / Up", "move"),
    ("PgDn, PgUp, g, G", "move a page, to the top, to the bottom"),
    (
        "h / Left, l / Right",
        "fold, unfold (sessions hold prompts, prompts tool calls)",
    ),
    ("Space, Tab", "fold or unfold"),
    ("J, K", "scroll the record and diff"),
    (
        "/",
        "search messages, metadata (key=value) and changed paths",
    ),
    ("n", "search again"),
    ("r", "restore the worktree to the checkpoint"),
    ("f", "restore one of the checkpoint's files"),
    ("F", "fork: a new branch at the checkpoint"),
    ("p", "pin the checkpoint"),
    ("d", "drop the checkpoint"),
    ("?", "this list"),
    ("q, Esc, Ctrl-C", "quit"),
];

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let [main, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(main);
    draw_list(frame, app, left);
    draw_detail(frame, app, right);
    draw_status(frame, app, status);
    match &app.mode {
        Mode::List | Mode::Search(_) => {}
        Mode::Help => draw_help(frame),
        Mode::Confirm(action) => draw_confirm(frame, &action.question()),
        Mode::Files { paths, selected } => draw_files(frame, paths, *selected),
    }
}

/// The selected row's look: reversed, which reads with or without colour.
fn selected_style() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// The graph of the rows shown: each folded group is one node, joined to what its
/// members are joined to.
fn layout(app: &App) -> Vec<graph::NodeRows> {
    let entries = app.entries();
    let visible = app.visible();
    let index: HashMap<CheckpointId, usize> =
        entries.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
    // Each entry's stand-in: itself when shown, else the shown entry above it, which
    // heads the folded run it is in.
    let mut stand_in = vec![0; entries.len()];
    let mut shown = visible.iter().peekable();
    let mut last = 0;
    for (i, slot) in stand_in.iter_mut().enumerate() {
        if shown.peek() == Some(&&i) {
            shown.next();
            last = i;
        }
        *slot = last;
    }
    let mut parents: HashMap<usize, Vec<CheckpointId>> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let own = stand_in[i];
        for p in &entry.graph_parents {
            let to = index.get(p).map_or(*p, |&j| entries[stand_in[j]].id);
            let list = parents.entry(own).or_default();
            if to != entries[own].id && !list.contains(&to) {
                list.push(to);
            }
        }
    }
    let nodes: Vec<(CheckpointId, Vec<CheckpointId>)> = visible
        .iter()
        .map(|&i| (entries[i].id, parents.remove(&i).unwrap_or_default()))
        .collect();
    graph::layout(&nodes)
}

/// One row's text after the graph: fold marker, id, age, labels, message.
fn row_text(app: &App, index: usize) -> String {
    let entry = &app.entries()[index];
    let colour = app.colour;
    let depth = app.groups_of(index).filter(|g| g.start < index).count();
    let folded = app.folded_at(index);
    let open = app
        .groups_of(index)
        .any(|g| g.start == index && g.end - g.start > 1);
    let marker = match (folded, open) {
        (Some(_), _) => "▸ ",
        (None, true) => "▾ ",
        _ => "  ",
    };
    let mut line = format!("{}{marker}", "  ".repeat(depth));
    line += &paint(&entry.short, style::ID, colour);
    line += " ";
    line += &paint(
        &relative_time(entry.time_ns, app.now_ns),
        style::DIM,
        colour,
    );
    line += " ";
    let labels = format_labels(&entry.labels, colour);
    if !labels.is_empty() {
        line += &labels;
        line += " ";
    }
    if entry.pinned {
        line += &paint("[pinned] ", style::DIM, colour);
    }
    let message = |e: &Entry| escape_controls(e.message.lines().next().unwrap_or("")).into_owned();
    match folded {
        Some(group) => {
            let n = group.end - group.start;
            let last = &app.entries()[group.end - 1];
            let what = match group.level {
                Level::Session => format!(
                    "[session {} {}: {n} checkpoints]",
                    escape_controls(entry.meta("agent").unwrap_or("agent")),
                    escape_controls(
                        &entry
                            .meta("session")
                            .unwrap_or("")
                            .chars()
                            .take(8)
                            .collect::<String>()
                    )
                ),
                Level::Prompt => format!("[prompt, {} tool calls]", n - 1),
            };
            line += &paint(&what, style::DIM, colour);
            line += " ";
            // A folded run is named by its oldest member: the session's first
            // checkpoint, the prompt itself.
            line += &message(last);
        }
        None => line += &message(entry),
    }
    line
}

fn ansi_lines(text: &str) -> Vec<Line<'static>> {
    match text.as_bytes().into_text() {
        Ok(text) => text.lines,
        Err(_) => vec![Line::raw(text.to_string())],
    }
}

fn draw_list(frame: &mut Frame<'_>, app: &mut App, area: Rect) {
    let title = format!(" Checkpoints ({}) ", app.entries().len());
    let block = Block::bordered().title(title);
    let height = block.inner(area).height as usize;
    let rows = layout(app);
    let heights: Vec<usize> = rows.iter().map(|r| 1 + r.after.len()).collect();
    // Scroll only as far as needed to keep the selection on screen.
    if app.selected < app.offset {
        app.offset = app.selected;
    }
    while app.offset < app.selected
        && heights[app.offset..=app.selected].iter().sum::<usize>() > height
    {
        app.offset += 1;
    }
    let mut items = Vec::new();
    let mut used = 0;
    for (k, rows) in rows.iter().enumerate().skip(app.offset) {
        if used >= height {
            break;
        }
        used += heights[k];
        let index = app.visible()[k];
        let mut lines = ansi_lines(&(rows.node.render(app.colour) + &row_text(app, index)));
        for after in &rows.after {
            lines.extend(ansi_lines(&after.render(app.colour)));
        }
        items.push(ListItem::new(Text::from(lines)));
    }
    let mut state = ListState::default().with_selected(Some(app.selected - app.offset));
    let list = List::new(items)
        .block(block)
        .highlight_style(selected_style());
    frame.render_stateful_widget(list, area, &mut state);
}

fn draw_detail(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let title = match app.selected_entry() {
        Some(entry) => format!(" show {} ", entry.short),
        None => " no checkpoints yet: 'git checkpoint save' makes the first ".to_string(),
    };
    let text = match &app.detail {
        Some(detail) => detail.text.clone(),
        None => Text::raw(""),
    };
    let paragraph = Paragraph::new(text)
        .block(Block::bordered().title(title))
        .scroll((app.detail_scroll, 0));
    frame.render_widget(paragraph, area);
}

fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let line = match &app.mode {
        Mode::Search(text) => format!("/{text}▏  (Enter: find, Esc: cancel)"),
        _ if !app.status.is_empty() => app.status.clone(),
        _ => "?: keys  r: restore  f: restore a file  /: search  q: quit".to_string(),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// A rectangle `width` by `height` in the middle of `area`, no larger than it.
fn centred(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

fn draw_help(frame: &mut Frame<'_>) {
    let width = KEYS
        .iter()
        .map(|(k, w)| k.len() + w.len() + 3)
        .max()
        .unwrap_or(0) as u16
        + 2;
    let area = centred(frame.area(), width, KEYS.len() as u16 + 3);
    let mut lines: Vec<Line<'_>> = KEYS
        .iter()
        .map(|(keys, what)| Line::raw(format!("{keys:<20} {what}")))
        .collect();
    lines.push(Line::raw("any key closes this"));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Keys ")),
        area,
    );
}

fn draw_confirm(frame: &mut Frame<'_>, question: &str) {
    let area = centred(frame.area(), 60, 7);
    let text = vec![
        Line::raw(question.to_string()),
        Line::raw(""),
        Line::raw("y: yes    any other key: no"),
    ];
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().title(" Confirm ")),
        area,
    );
}

fn draw_files(frame: &mut Frame<'_>, paths: &[Vec<u8>], selected: usize) {
    let area = centred(frame.area(), 70, paths.len() as u16 + 3);
    let items: Vec<ListItem<'_>> = paths
        .iter()
        .map(|p| ListItem::new(escape_controls(&show_path(p)).into_owned()))
        .collect();
    let mut state = ListState::default().with_selected(Some(selected));
    frame.render_widget(Clear, area);
    frame.render_stateful_widget(
        List::new(items)
            .block(Block::bordered().title(" Restore which file? (Enter: choose, Esc: back) "))
            .highlight_style(selected_style()),
        area,
        &mut state,
    );
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::style::Color;
    use ratatui::Terminal;

    use super::*;
    use crate::browse::app::{Action, Detail, Effect};

    const MINUTE: i128 = 60_000_000_000;
    const NOW: i128 = 1_700_000_000_000_000_000;

    fn entry(n: u128, minutes_ago: i128, message: &str, parents: &[u128]) -> Entry {
        Entry {
            id: CheckpointId(n),
            short: format!("c{n:06x}"),
            time_ns: NOW - minutes_ago * MINUTE,
            message: message.to_string(),
            meta: Vec::new(),
            labels: Vec::new(),
            pinned: false,
            graph_parents: parents.iter().map(|&p| CheckpointId(p)).collect(),
        }
    }

    fn agent(mut e: Entry, kind: &str) -> Entry {
        e.meta = vec![
            ("agent".into(), "claude".into()),
            ("session".into(), "4f2a9c1d-77".into()),
            ("kind".into(), kind.into()),
        ];
        e
    }

    /// A main line with an agent session on it (two prompts, three tool calls) and a
    /// fork off its first checkpoint.
    fn entries() -> Vec<Entry> {
        let mut tip = agent(entry(8, 1, "Edit src/parser.rs", &[7]), "tool");
        tip.labels = vec!["HEAD -> main".into()];
        let mut fork = entry(9, 3, "try the other parser", &[1]);
        fork.labels = vec!["fork-1".into()];
        let mut first = entry(1, 60, "first", &[]);
        first.pinned = true;
        vec![
            tip,
            agent(entry(7, 2, "Bash cargo test", &[6]), "tool"),
            agent(entry(6, 4, "fix the parser", &[5]), "prompt"),
            agent(entry(5, 6, "Write README.md", &[4]), "tool"),
            agent(entry(4, 8, "document the parser", &[2]), "prompt"),
            fork,
            entry(2, 30, "second", &[1]),
            first,
        ]
    }

    const DIFF: &str = "checkpoint 0000000000000000000000000000000008 (HEAD -> main)\nParent: c000007\n\n    Edit src/parser.rs\n\ndiff --git a/src/parser.rs b/src/parser.rs\n\x1b[36m@@ -1 +1 @@\x1b[m\n\x1b[31m-old\x1b[m\n\x1b[32m+new\x1b[m\n";

    fn app(colour: bool) -> App {
        let mut app = App::new(entries(), colour, NOW);
        app.detail = Some(Detail {
            id: CheckpointId(8),
            text: DIFF.as_bytes().into_text().unwrap(),
        });
        app
    }

    fn screen(app: &mut App) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(110, 22)).unwrap();
        terminal.draw(|frame| draw(frame, app)).unwrap();
        terminal
    }

    fn press(app: &mut App, code: KeyCode) -> Effect {
        app.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn the_list_folds_prompts_and_shows_the_record_and_diff() {
        let mut app = app(true);
        let terminal = screen(&mut app);
        insta::assert_snapshot!("list", terminal.backend());
        // The diff keeps show's colours: find the `+new` line's sign.
        let buffer = terminal.backend().buffer();
        let plus = (0..buffer.area.height)
            .flat_map(|y| (0..buffer.area.width).map(move |x| (x, y)))
            .find(|&(x, y)| buffer[(x, y)].symbol() == "+" && buffer[(x + 1, y)].symbol() == "n")
            .expect("the added line is shown");
        assert_eq!(buffer[plus].fg, Color::Green);
    }

    #[test]
    fn without_colour_nothing_is_coloured_but_the_selection_reads() {
        let mut app = app(false);
        app.detail = None;
        let terminal = screen(&mut app);
        let buffer = terminal.backend().buffer();
        assert!(buffer.content().iter().all(|c| c.fg == Color::Reset));
        assert!(buffer
            .content()
            .iter()
            .any(|c| c.modifier.contains(Modifier::REVERSED)));
    }

    #[test]
    fn folds_open_and_close_by_session_and_prompt() {
        let mut app = app(false);
        // Prompts start folded: tip (standing for prompt 6's run), 5/4's run, fork, 2, 1.
        assert_eq!(app.visible(), &[0, 3, 5, 6, 7]);
        press(&mut app, KeyCode::Right);
        assert_eq!(app.visible(), &[0, 1, 2, 3, 5, 6, 7]);
        insta::assert_snapshot!("unfolded", screen(&mut app).backend());
        // Folding from a tool call folds its prompt, then the session.
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Left);
        assert_eq!(app.visible(), &[0, 3, 5, 6, 7]);
        assert_eq!(app.selected, 0);
        press(&mut app, KeyCode::Left);
        assert_eq!(app.visible(), &[0, 5, 6, 7]);
        press(&mut app, KeyCode::Char(' '));
        assert_eq!(app.visible(), &[0, 3, 5, 6, 7]);
    }

    #[test]
    fn help_lists_the_keys_and_any_key_closes_it() {
        let mut app = app(true);
        press(&mut app, KeyCode::Char('?'));
        insta::assert_snapshot!("help", screen(&mut app).backend());
        assert_eq!(press(&mut app, KeyCode::Char('x')), Effect::None);
        assert_eq!(app.mode, Mode::List);
    }

    #[test]
    fn a_restore_is_asked_first_and_only_yes_does_it() {
        let mut app = app(true);
        press(&mut app, KeyCode::Char('r'));
        insta::assert_snapshot!("confirm", screen(&mut app).backend());
        assert_eq!(press(&mut app, KeyCode::Char('n')), Effect::None);
        assert_eq!(app.status, "Cancelled");
        press(&mut app, KeyCode::Char('r'));
        let restore = Action::Restore {
            id: CheckpointId(8),
            short: "c000008".into(),
        };
        assert_eq!(press(&mut app, KeyCode::Char('y')), Effect::Act(restore));
    }

    #[test]
    fn a_file_restore_asks_which_file_then_to_confirm() {
        let mut app = app(true);
        assert_eq!(press(&mut app, KeyCode::Char('f')), Effect::PickFile);
        app.mode = Mode::Files {
            paths: vec![b"README.md".to_vec(), b"src/parser.rs".to_vec()],
            selected: 0,
        };
        press(&mut app, KeyCode::Down);
        insta::assert_snapshot!("files", screen(&mut app).backend());
        press(&mut app, KeyCode::Enter);
        assert!(
            matches!(&app.mode, Mode::Confirm(Action::RestoreFile { path, .. }) if path == b"src/parser.rs")
        );
    }

    #[test]
    fn a_search_is_typed_on_the_status_line_and_finds_messages_and_meta() {
        let mut app = app(true);
        press(&mut app, KeyCode::Char('/'));
        for c in "PARSER".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        insta::assert_snapshot!("search", screen(&mut app).backend());
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Effect::Search("PARSER".into())
        );
        // From the entry after the selection on, wrapping round to the selection
        // itself last; metadata matches as key=value.
        let found: Vec<usize> = app
            .search_order("parser")
            .into_iter()
            .filter(|c| c.2)
            .map(|c| c.0)
            .collect();
        assert_eq!(found, [2, 4, 5, 0]);
        let by_meta = app.search_order("kind=prompt");
        assert_eq!(
            by_meta
                .iter()
                .filter(|c| c.2)
                .map(|c| c.0)
                .collect::<Vec<_>>(),
            [2, 4]
        );
        assert_eq!(
            press(&mut app, KeyCode::Char('n')),
            Effect::Search("PARSER".into())
        );
    }

    #[test]
    fn ctrl_c_and_q_quit_from_the_list_ctrl_c_from_anywhere() {
        let mut app = app(true);
        assert_eq!(press(&mut app, KeyCode::Char('q')), Effect::Quit);
        press(&mut app, KeyCode::Char('?'));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(app.key(ctrl_c), Effect::Quit);
    }

    #[test]
    fn the_list_scrolls_to_keep_the_selection_on_screen() {
        let many: Vec<Entry> = (1..=200u128)
            .rev()
            .map(|n| entry(n, 300 - n as i128, &format!("step {n}"), &[]))
            .collect();
        let mut app = App::new(many, false, NOW);
        for _ in 0..150 {
            press(&mut app, KeyCode::Down);
        }
        let terminal = screen(&mut app);
        let text = format!("{}", terminal.backend());
        assert!(text.contains("step 50 "), "{text}");
        assert!(!text.contains("step 200 "), "{text}");
    }
}
