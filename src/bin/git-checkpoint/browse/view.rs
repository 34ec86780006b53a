//! Draws `browse`: the list on the left (its rows are `rows.rs`'s), the selected row's
//! record and diff on the right, a status line, and the dialog open on top.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use git_checkpoint::clock::rfc3339;
use git_checkpoint::text::escape_controls;

use super::app::{App, FilePurpose, Made, Mode};
use super::detail::MAX_LINES;
use super::rows::{list_items, list_width};
use crate::ui::output::{relative_time, show_path};

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
    ("R", "read the list again (checkpoints saved since)"),
    ("r", "restore the worktree to the checkpoint"),
    ("f", "restore one of the checkpoint's files"),
    ("s", "restore only the files its session changed since"),
    ("u", "revert the step (on a folded prompt: its turn)"),
    ("x", "revert one file's change in the step (or turn)"),
    ("F", "fork: a new branch at the checkpoint"),
    ("p", "pin the checkpoint"),
    ("d", "drop the checkpoint"),
    ("U", "undo the newest operation (git checkpoint undo)"),
    ("?", "this list"),
    ("q, Esc, Ctrl-C", "quit"),
];

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let [main, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
    // The list's rows are made first: the list is as wide as they need, within its share.
    let block = Block::bordered().title(format!(" Checkpoints ({}) ", app.total));
    let items = list_items(app, usize::from(main.height.saturating_sub(2)));
    let widest = items.iter().map(ListItem::width).max().unwrap_or(0);
    let wanted = u16::try_from(widest + 2).unwrap_or(u16::MAX);
    app.list_width = app.list_width.max(wanted);
    let width = list_width(main.width, app.list_width);
    let [left, right] =
        Layout::horizontal([Constraint::Length(width), Constraint::Min(0)]).areas(main);
    let mut state = ListState::default().with_selected(Some(app.selected - app.offset));
    let list = List::new(items)
        .block(block)
        .highlight_style(selected_style());
    frame.render_stateful_widget(list, left, &mut state);
    draw_detail(frame, app, right);
    draw_status(frame, app, status);
    match &app.mode {
        Mode::List | Mode::Search(_) => {}
        Mode::Help => draw_help(frame),
        Mode::Confirm(action) => draw_confirm(frame, &action.question()),
        Mode::Files {
            paths,
            selected,
            purpose,
        } => draw_files(frame, paths, *selected, *purpose),
    }
}

/// The selected row's look: reversed, which reads with or without colour.
fn selected_style() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// The detail: the selected row's record and diff as far as they are made (only the
/// lines on screen are handed to the widget), a busy marker in the title while they are
/// made, and where to see the rest of a diff cut short.
fn draw_detail(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(target) = app.detail_target() else {
        let title = " no checkpoints yet: 'git checkpoint save' makes the first ";
        frame.render_widget(Block::bordered().title(title), area);
        return;
    };
    let short = |id| app.short_of(id).unwrap_or("?").to_string();
    let (what, rest) = match target.turn_end {
        Some(end) => (
            format!("turn {}..{}", short(target.id), short(end)),
            format!("git checkpoint diff {} {}", short(target.id), short(end)),
        ),
        None => (
            format!("show {}", short(target.id)),
            format!("git checkpoint show {}", short(target.id)),
        ),
    };
    let made = app.detail.as_ref().map(|d| d.made);
    let title = match made {
        Some(Made::Building) | None => format!(" {what} · building… "),
        _ => format!(" {what} "),
    };
    let block = Block::bordered().title(title);
    let height = usize::from(block.inner(area).height);
    // The record's date, with its age counted from now: `show`'s `Date:` line.
    let date = app.entries().iter().find(|e| e.id == target.id).map(|e| {
        Line::raw(format!(
            "Date:   {} ({})",
            rfc3339(e.time_ns),
            relative_time(e.time_ns, app.now_ns)
        ))
    });
    let mut lines: Vec<Line<'static>> = match &app.detail {
        Some(detail) => detail
            .text
            .lines
            .iter()
            .enumerate()
            .skip(usize::from(app.detail_scroll))
            .take(height)
            .map(|(i, line)| match &date {
                Some(date) if detail.date_line == Some(i) => date.clone(),
                _ => line.clone(),
            })
            .collect(),
        None => Vec::new(),
    };
    if made == Some(Made::Cut) && lines.len() < height {
        lines.push(Line::raw(format!(
            "[cut at {MAX_LINES} lines: '{rest}' prints all of it]"
        )));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let line = match &app.mode {
        Mode::Search(text) => format!("/{text}▏  (Enter: find, Esc: cancel)"),
        _ if !app.status.is_empty() => app.status.clone(),
        _ => "?: keys  r: restore  f: restore a file  s: a session's files  u: revert  x: revert a file  U: undo  /: search  q: quit"
            .to_string(),
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
    // Room for the longest question wrapped (four lines), a blank line and the keys.
    let area = centred(frame.area(), 60, 8);
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

fn draw_files(frame: &mut Frame<'_>, paths: &[Vec<u8>], selected: usize, purpose: FilePurpose) {
    let area = centred(frame.area(), 70, paths.len() as u16 + 3);
    let items: Vec<ListItem<'_>> = paths
        .iter()
        .map(|p| ListItem::new(escape_controls(&show_path(p)).into_owned()))
        .collect();
    let mut state = ListState::default().with_selected(Some(selected));
    frame.render_widget(Clear, area);
    frame.render_stateful_widget(
        List::new(items)
            .block(Block::bordered().title(match purpose {
                FilePurpose::Restore => " Restore which file? (Enter: choose, Esc: back) ",
                FilePurpose::Revert => " Revert which file's change? (Enter: choose, Esc: back) ",
            }))
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
    use crate::browse::action::Action;
    use crate::browse::app::{Detail, Effect};
    use crate::browse::entries::{Entry, Level};
    use ansi_to_tui::IntoText;
    use git_checkpoint::CheckpointId;

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
        let mut app = App::new(entries(), false, colour, NOW);
        app.detail = Some(Detail {
            target: app.detail_target().unwrap(),
            text: DIFF.as_bytes().into_text().unwrap(),
            made: Made::Whole,
            date_line: None,
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
    fn a_session_restore_and_a_revert_are_asked_first() {
        let mut app = app(true);
        // The first row stands for the newer prompt's turn (8, 7 and the prompt, 6).
        press(&mut app, KeyCode::Char('s'));
        insta::assert_snapshot!("confirm_session", screen(&mut app).backend());
        let session = Action::RestoreSession {
            id: CheckpointId(8),
            short: "c000008".into(),
            session: "4f2a9c1d-77".into(),
        };
        assert_eq!(press(&mut app, KeyCode::Char('y')), Effect::Act(session));
        // u on a folded prompt reverts its turn: from the prompt to its last tool call.
        press(&mut app, KeyCode::Char('u'));
        insta::assert_snapshot!("confirm_turn", screen(&mut app).backend());
        let turn = Action::Revert {
            rev: "c000006..c000008".into(),
            turn: Some(2),
        };
        assert_eq!(press(&mut app, KeyCode::Char('y')), Effect::Act(turn));
        // Opened, each row is one step.
        press(&mut app, KeyCode::Right);
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Char('u'));
        let step = Action::Revert {
            rev: "c000007".into(),
            turn: None,
        };
        assert_eq!(app.mode, Mode::Confirm(step));
        press(&mut app, KeyCode::Char('n'));
        // A checkpoint no session saved has no session's files to restore.
        while app.selected_entry().unwrap().id != CheckpointId(9) {
            press(&mut app, KeyCode::Down);
        }
        press(&mut app, KeyCode::Char('s'));
        assert_eq!(app.mode, Mode::List);
        assert!(
            app.status.contains("was not saved by an agent session"),
            "{}",
            app.status
        );
    }

    #[test]
    fn a_file_restore_asks_which_file_then_to_confirm() {
        let mut app = app(true);
        assert_eq!(
            press(&mut app, KeyCode::Char('f')),
            Effect::PickFile(FilePurpose::Restore)
        );
        app.mode = Mode::Files {
            paths: vec![b"README.md".to_vec(), b"src/parser.rs".to_vec()],
            selected: 0,
            purpose: FilePurpose::Restore,
        };
        press(&mut app, KeyCode::Down);
        insta::assert_snapshot!("files", screen(&mut app).backend());
        press(&mut app, KeyCode::Enter);
        assert!(
            matches!(&app.mode, Mode::Confirm(Action::RestoreFile { path, .. }) if path == b"src/parser.rs")
        );
    }

    #[test]
    fn a_file_revert_asks_which_file_then_to_confirm_naming_the_step_or_turn() {
        let mut app = app(true);
        assert_eq!(
            press(&mut app, KeyCode::Char('x')),
            Effect::PickFile(FilePurpose::Revert)
        );
        app.mode = Mode::Files {
            paths: vec![b"README.md".to_vec(), b"src/parser.rs".to_vec()],
            selected: 0,
            purpose: FilePurpose::Revert,
        };
        press(&mut app, KeyCode::Down);
        insta::assert_snapshot!("revert_files", screen(&mut app).backend());
        press(&mut app, KeyCode::Enter);
        insta::assert_snapshot!("confirm_revert_file", screen(&mut app).backend());
        // The first row stands for a folded prompt's turn: the file's change in all of it.
        let turn = Action::RevertFile {
            rev: "c000006..c000008".into(),
            path: b"src/parser.rs".to_vec(),
        };
        assert_eq!(press(&mut app, KeyCode::Char('y')), Effect::Act(turn));
        // Opened, each row is one step.
        press(&mut app, KeyCode::Right);
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Char('x'));
        app.mode = Mode::Files {
            paths: vec![b"src/parser.rs".to_vec()],
            selected: 0,
            purpose: FilePurpose::Revert,
        };
        press(&mut app, KeyCode::Enter);
        let step = Action::RevertFile {
            rev: "c000007".into(),
            path: b"src/parser.rs".to_vec(),
        };
        assert_eq!(app.mode, Mode::Confirm(step));
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
        // From the entry after the selection on; metadata matches as key=value.
        let found: Vec<usize> = app
            .search_order("parser", app.search_start()..8)
            .into_iter()
            .filter(|c| c.2)
            .map(|c| c.0)
            .collect();
        assert_eq!(found, [2, 4, 5]);
        // Round from the top to the selection itself, last.
        let wrapped: Vec<usize> = app
            .search_order("parser", 0..app.search_start())
            .into_iter()
            .filter(|c| c.2)
            .map(|c| c.0)
            .collect();
        assert_eq!(wrapped, [0]);
        let by_meta = app.search_order("kind=prompt", 0..8);
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

    /// The rows shown: each one's id and fold marker.
    fn rows(app: &App) -> Vec<(u128, Option<Level>)> {
        app.visible()
            .iter()
            .map(|&i| (app.entries()[i].id.0, app.folded_at(i).map(|g| g.level)))
            .collect()
    }

    #[test]
    fn a_list_read_in_parts_folds_as_the_whole_does() {
        let whole = App::new(entries(), false, false, NOW);
        for k in 0..=8 {
            let mut all = entries();
            let rest = all.split_off(k);
            let mut app = App::new(all, k < 8, false, NOW);
            // Rows are shown only where their folds are known: never a tool call whose
            // prompt is not read yet, and what is shown is the start of the whole.
            let shown = rows(&app);
            assert_eq!(shown, rows(&whole)[..shown.len()], "read {k}");
            assert_eq!(app.wants_more(10), k < 8, "read {k}");
            app.append(rest, false);
            assert_eq!(rows(&app), rows(&whole), "read {k}");
        }
        // One tool call read: nothing settled, its prompt's fold not known yet.
        let mut one = entries();
        one.truncate(1);
        let app = App::new(one, true, false, NOW);
        assert!(app.visible().is_empty());
    }

    #[test]
    fn keys_that_need_the_rest_of_the_list_ask_for_it() {
        let mut part = entries();
        part.truncate(3);
        let mut app = App::new(part, true, false, NOW);
        // The end of the list: everything is to be read first.
        assert_eq!(
            press(&mut app, KeyCode::Char('G')),
            Effect::More { all: true }
        );
        // Folding the session, whose first checkpoint is not read: more first.
        press(&mut app, KeyCode::Right);
        assert_eq!(press(&mut app, KeyCode::Down), Effect::None);
        press(&mut app, KeyCode::Left);
        assert_eq!(press(&mut app, KeyCode::Left), Effect::More { all: false });
        app.append(entries().split_off(3), false);
        assert_eq!(press(&mut app, KeyCode::Left), Effect::None);
        assert_eq!(app.visible(), &[0, 5, 6, 7]);
        assert_eq!(press(&mut app, KeyCode::Char('G')), Effect::None);
        assert_eq!(app.selected, 3);
    }

    #[test]
    fn folds_and_the_selection_stay_by_id_when_the_list_is_read_again() {
        let mut app = app(false);
        // Open the newer prompt, select its prompt checkpoint (6), fold the older one
        // back (it starts folded) and leave it so.
        press(&mut app, KeyCode::Right);
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Down);
        assert_eq!(app.selected_entry().unwrap().id, CheckpointId(6));
        // An action saved a checkpoint on top (a restore's safety checkpoint) and
        // dropped the fork: the list is read again.
        let mut fresh = entries();
        fresh.retain(|e| e.id != CheckpointId(9));
        fresh.insert(0, entry(10, 0, "before restore", &[8]));
        app.replace_entries(fresh, false);
        assert_eq!(app.selected_entry().unwrap().id, CheckpointId(6));
        assert_eq!(
            rows(&app),
            [
                (10, None),
                (8, None),
                (7, None),
                (6, None),
                (5, Some(Level::Prompt)),
                (2, None),
                (1, None)
            ]
        );
        // A fold the user closed stays closed too.
        press(&mut app, KeyCode::Left);
        app.replace_entries(entries(), false);
        assert_eq!(app.visible(), &[0, 3, 5, 6, 7]);
        assert_eq!(app.selected_entry().unwrap().id, CheckpointId(8));
    }

    #[test]
    fn the_list_scrolls_to_keep_the_selection_on_screen() {
        let many: Vec<Entry> = (1..=200u128)
            .rev()
            .map(|n| entry(n, 300 - n as i128, &format!("step {n}"), &[]))
            .collect();
        let mut app = App::new(many, false, false, NOW);
        for _ in 0..150 {
            press(&mut app, KeyCode::Down);
        }
        let terminal = screen(&mut app);
        let text = format!("{}", terminal.backend());
        assert!(text.contains("step 50 "), "{text}");
        assert!(!text.contains("step 200 "), "{text}");
    }
}
