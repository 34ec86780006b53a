//! The list's rows: the graph of the rows shown (a folded run is one node), each row's
//! text, made with the same helpers as `log` (labels, ages, the graph's lanes) as
//! coloured text and shown through `ansi-to-tui`, and the width the list takes.

use std::collections::HashMap;

use ansi_to_tui::IntoText;
use ratatui::text::{Line, Text};
use ratatui::widgets::ListItem;

use git_checkpoint::model::session::prompt_text;
use git_checkpoint::text::{counted, escape_controls};
use git_checkpoint::CheckpointId;

use super::action::short_session;
use super::app::App;
use super::entries::{Entry, Level};
use crate::ui::graph;
use crate::ui::output::{format_labels, paint, relative_time, style};

/// The columns the detail keeps at least on a wide terminal, where the list may take
/// more than half: enough for most lines of a diff.
const DETAIL_COLUMNS: u16 = 64;

/// The list pane's width on a terminal `width` columns wide, for rows `wanted` columns
/// wide (borders included): what they want, but at least a third of the terminal (ids
/// and ages always show), and at most half of it, or all but [`DETAIL_COLUMNS`] on a
/// terminal wider than twice that.
pub fn list_width(width: u16, wanted: u16) -> u16 {
    let most = (width / 2).max(width.saturating_sub(DETAIL_COLUMNS));
    wanted.clamp(width / 3, most)
}

/// The graph of the rows shown: each folded group is one node, joined to what its
/// members are joined to.
fn layout(app: &App) -> Vec<graph::NodeRows> {
    // Only the settled entries: the ones after them are drawn once their rows are known.
    let entries = &app.entries()[..app.settled()];
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
            // A folded run is named by its oldest member: the session's first
            // checkpoint, the prompt itself (by its text, its number in the brackets).
            let last = &app.entries()[group.end - 1];
            let (what, name) = match group.level {
                Level::Session => (
                    format!(
                        "[session {} {}: {}]",
                        escape_controls(entry.meta("agent").unwrap_or("agent")),
                        escape_controls(&short_session(entry.meta("session").unwrap_or(""))),
                        counted(n, "checkpoint")
                    ),
                    message(last),
                ),
                Level::Prompt => (
                    format!(
                        "[prompt{}, {}]",
                        last.meta("prompt")
                            .map(|n| format!(" {}", escape_controls(n)))
                            .unwrap_or_default(),
                        counted(n - 1, "tool call")
                    ),
                    escape_controls(&prompt_text(&last.message)).into_owned(),
                ),
            };
            line += &paint(&what, style::DIM, colour);
            line += " ";
            line += &name;
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

/// The list's rows for a pane `height` rows high, from the first row drawn, which moves
/// only as far as it must to keep the selection on screen.
pub fn list_items(app: &mut App, height: usize) -> Vec<ListItem<'static>> {
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
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint of session `4f2a9c1d` of kind `kind`.
    fn step(n: u128, kind: &str, message: &str) -> Entry {
        Entry {
            id: CheckpointId(n),
            short: format!("c{n:06x}"),
            time_ns: 0,
            message: message.to_string(),
            meta: vec![
                ("agent".into(), "claude".into()),
                ("session".into(), "4f2a9c1d-77".into()),
                ("kind".into(), kind.into()),
                ("prompt".into(), "3".into()),
            ],
            labels: Vec::new(),
            pinned: false,
            graph_parents: vec![CheckpointId(n - 1)],
        }
    }

    #[test]
    fn a_folded_prompt_reads_its_number_its_tool_calls_and_its_text() {
        let one = vec![
            step(3, "tool", "after Edit: parser.rs"),
            step(
                2,
                "prompt",
                "before prompt 3: fix the parser\nand its tests",
            ),
        ];
        let app = App::new(one, false, false, 0);
        let text = row_text(&app, 0);
        assert!(
            text.ends_with(" [prompt 3, 1 tool call] fix the parser"),
            "{text}"
        );
        let mut two = vec![step(4, "tool", "after Bash: cargo test")];
        two.extend(app.entries().iter().cloned());
        let app = App::new(two, false, false, 0);
        let text = row_text(&app, 0);
        assert!(text.contains(" [prompt 3, 2 tool calls] "), "{text}");
    }

    #[test]
    fn the_list_is_as_wide_as_its_rows_within_its_share() {
        // Half at most on a usual terminal; beyond 128 columns the detail keeps 64.
        assert_eq!(list_width(120, 100), 60);
        assert_eq!(list_width(160, 90), 90);
        assert_eq!(list_width(160, 120), 96);
        assert_eq!(list_width(200, 150), 136);
        // Short rows take what they need, a third at least.
        assert_eq!(list_width(160, 60), 60);
        assert_eq!(list_width(120, 20), 40);
        assert_eq!(list_width(10, 100), 5);
    }
}
