//! Drawing the checkpoint DAG as text lanes, as `git log --graph` does: one column per
//! line of history still open, `*` for a checkpoint, `|` for a lane going on, `/` for a
//! lane moving one column left (joining another, or closing up a gap) and `\` for a lane
//! opening to the right (a checkpoint with several parents).
//!
//! Rules that keep the picture correct and stable however long the history:
//! - Nodes come children first ([`git_checkpoint::ops::log`] orders them so). A node takes the
//!   lane that waits for it, or opens a new lane on the right.
//! - After its row, a node's lane waits for its first parent; further parents open
//!   lanes right next to it.
//! - Lanes that wait for the same node join at once, the right one moving into the
//!   left one a column per row, and lanes right of a closed lane shift left the same
//!   way. So every lane has settled before the next node's row, which holds only `*`
//!   and `|`, and a lane never waits for a node that an earlier lane waits for.
//! - At most [`MAX_LANES`] lanes wait at once, so that every row is short and the
//!   picture grows with the number of nodes, not its square (a fetched checkpoint may
//!   have thousands of parents). A parent that finds no room gets no line: it is drawn
//!   where the list reaches it, as a start of its own line; a node that finds no room
//!   (every lane taken) closes its lane after its row, as a root does.

/// The most lanes that wait at once: wide enough for any history a person reads as a
/// picture.
pub const MAX_LANES: usize = 32;

/// ANSI colours of the lanes, in the order git uses them.
const PALETTE: [&str; 6] = ["31", "32", "33", "34", "35", "36"];

/// One character of a graph line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// `*`, `|`, `/` or `\`.
    pub glyph: char,
    /// The lane's colour (an index into the palette), `None` for a node's `*`.
    pub colour: Option<usize>,
}

/// One line of graph: cells by character column, `None` for a blank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line {
    /// The cells, left to right.
    pub cells: Vec<Option<Cell>>,
}

impl Line {
    fn put(&mut self, column: usize, glyph: char, colour: Option<usize>) {
        if self.cells.len() <= column {
            self.cells.resize(column + 1, None);
        }
        // The first lane to draw a column wins: a lane that joins another lane draws
        // nothing over it.
        if self.cells[column].is_none() {
            self.cells[column] = Some(Cell { glyph, colour });
        }
    }

    /// The line as text, with ANSI colours when `colour` is set.
    pub fn render(&self, colour: bool) -> String {
        let mut out = String::with_capacity(self.cells.len());
        for cell in &self.cells {
            match cell {
                None => out.push(' '),
                Some(Cell {
                    glyph,
                    colour: Some(c),
                }) if colour => out.push_str(&format!(
                    "\x1b[{}m{glyph}\x1b[m",
                    PALETTE[c % PALETTE.len()]
                )),
                Some(cell) => out.push(cell.glyph),
            }
        }
        out
    }
}

/// The graph lines of one node: its own row, then the rows that connect it to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRows {
    /// The node's row, padded to the width of the lanes open at it, so that text
    /// written after it lines up.
    pub node: Line,
    /// Rows drawn after it, before the next node's row.
    pub after: Vec<Line>,
}

struct Lane<K> {
    waits_for: K,
    pos: usize,
    colour: usize,
}

/// Lays out `nodes` (each with its parents, children before parents) as graph lines.
/// Parents that are not among the nodes keep a lane open to the bottom.
pub fn layout<K: Copy + Eq>(nodes: &[(K, Vec<K>)]) -> Vec<NodeRows> {
    let mut lanes: Vec<Lane<K>> = Vec::new();
    let mut colours = 0usize;
    let mut next_colour = || {
        colours += 1;
        colours - 1
    };
    let mut out = Vec::with_capacity(nodes.len());
    for (id, parents) in nodes {
        let col = match lanes.iter().position(|l| l.waits_for == *id) {
            Some(col) => col,
            None => {
                lanes.push(Lane {
                    waits_for: *id,
                    pos: lanes.len(),
                    colour: next_colour(),
                });
                lanes.len() - 1
            }
        };
        let mut node = Line::default();
        for (i, lane) in lanes.iter().enumerate() {
            if i == col {
                node.put(2 * i, '*', None);
            } else {
                node.put(2 * i, '|', Some(lane.colour));
            }
        }
        node.cells.resize(2 * lanes.len(), None);

        let mut after = Vec::new();
        // A lane past the limit goes on only to join a lane already waiting.
        let crowded = |first: &K| {
            lanes.len() > MAX_LANES
                && !lanes
                    .iter()
                    .enumerate()
                    .any(|(i, l)| i != col && l.waits_for == *first)
        };
        match parents.split_first() {
            Some((first, _)) if crowded(first) => {
                lanes.remove(col);
            }
            None => {
                // Lanes to the right keep their columns for now and shift left below.
                lanes.remove(col);
            }
            Some((first, rest)) => {
                lanes[col].waits_for = *first;
                let room = MAX_LANES.saturating_sub(lanes.len());
                for (k, parent) in rest.iter().take(room).enumerate() {
                    lanes.insert(
                        col + 1 + k,
                        Lane {
                            waits_for: *parent,
                            pos: col,
                            colour: next_colour(),
                        },
                    );
                }
                open_right(&mut lanes, &mut after);
            }
        }
        settle(&mut lanes, &mut after);
        out.push(NodeRows { node, after });
    }
    out
}

/// Moves lanes right, one column per row, until each sits at its index.
fn open_right<K>(lanes: &mut [Lane<K>], after: &mut Vec<Line>) {
    while lanes.iter().enumerate().any(|(i, l)| l.pos < i) {
        let mut line = Line::default();
        for (i, lane) in lanes.iter_mut().enumerate() {
            if lane.pos < i {
                line.put(2 * lane.pos + 1, '\\', Some(lane.colour));
                lane.pos += 1;
            } else {
                line.put(2 * lane.pos, '|', Some(lane.colour));
            }
        }
        after.push(line);
    }
}

/// Joins lanes that wait for the same node and closes gaps, moving lanes left one
/// column per row, until the lanes sit in columns 0, 1, 2, … with no two alike.
fn settle<K: Copy + Eq>(lanes: &mut Vec<Lane<K>>, after: &mut Vec<Line>) {
    loop {
        // Each distinct node gets the next column, in lane order; a lane waiting for a
        // node an earlier lane waits for goes to that lane's column.
        let mut distinct: Vec<K> = Vec::new();
        let targets: Vec<usize> = lanes
            .iter()
            .map(
                |lane| match distinct.iter().position(|k| *k == lane.waits_for) {
                    Some(t) => t,
                    None => {
                        distinct.push(lane.waits_for);
                        distinct.len() - 1
                    }
                },
            )
            .collect();
        if lanes.iter().zip(&targets).all(|(l, &t)| l.pos == t) {
            break;
        }
        let mut line = Line::default();
        for (lane, &target) in lanes.iter_mut().zip(&targets) {
            if lane.pos > target {
                line.put(2 * lane.pos - 1, '/', Some(lane.colour));
                lane.pos -= 1;
            } else {
                line.put(2 * lane.pos, '|', Some(lane.colour));
            }
        }
        trim(&mut line);
        after.push(line);
    }
    let mut seen: Vec<K> = Vec::new();
    lanes.retain(|lane| {
        let first = !seen.contains(&lane.waits_for);
        seen.push(lane.waits_for);
        first
    });
}

fn trim(line: &mut Line) {
    while line.cells.last() == Some(&None) {
        line.cells.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph of `nodes` as plain text, one string per line, node rows marked with
    /// the node's name after the graph.
    fn draw(nodes: &[(char, &str)]) -> Vec<String> {
        let input: Vec<(char, Vec<char>)> = nodes
            .iter()
            .map(|(n, p)| (*n, p.chars().collect()))
            .collect();
        let mut out = Vec::new();
        for ((name, _), rows) in nodes.iter().zip(layout(&input)) {
            out.push(format!("{}{name}", rows.node.render(false)));
            out.extend(rows.after.iter().map(|l| l.render(false)));
        }
        out
    }

    #[test]
    fn a_linear_history_is_one_lane() {
        assert_eq!(
            draw(&[('c', "b"), ('b', "a"), ('a', "")]),
            ["* c", "* b", "* a"]
        );
    }

    #[test]
    fn a_fork_joins_its_base() {
        assert_eq!(
            draw(&[
                ('y', "x"),
                ('x', "b"),
                ('d', "c"),
                ('c', "b"),
                ('b', "a"),
                ('a', "")
            ]),
            ["* y", "* x", "| * d", "| * c", "|/", "* b", "* a"]
        );
    }

    #[test]
    fn a_lane_crosses_others_to_reach_its_parent() {
        // Three tips; the rightmost forks off the oldest checkpoint.
        assert_eq!(
            draw(&[('p', "o"), ('q', "o"), ('r', "a"), ('o', "a"), ('a', "")]),
            ["* p", "| * q", "|/", "| * r", "* | o", "|/", "* a"]
        );
        assert_eq!(
            draw(&[('p', "a"), ('q', "b"), ('r', "a"), ('b', "a"), ('a', "")]),
            ["* p", "| * q", "| | * r", "| |/", "|/|", "| * b", "|/", "* a"]
        );
    }

    #[test]
    fn a_root_in_the_middle_closes_its_lane() {
        assert_eq!(
            draw(&[('b', "a"), ('y', ""), ('z', "a"), ('a', "")]),
            ["* b", "| * y", "| * z", "|/", "* a"]
        );
        // A root with a lane to its right: that lane moves over.
        assert_eq!(
            draw(&[('c', "y"), ('d', "e"), ('y', ""), ('e', "")]),
            ["* c", "| * d", "* | y", " /", "* e"]
        );
    }

    #[test]
    fn a_merge_opens_a_lane_to_the_right() {
        assert_eq!(
            draw(&[('m', "ab"), ('b', "r"), ('a', "r"), ('r', "")]),
            ["* m", "|\\", "| * b", "* | a", "|/", "* r"]
        );
    }

    #[test]
    fn lanes_stay_within_the_limit_however_many_parents() {
        let parents: Vec<u32> = (1..=1000).collect();
        let mut nodes = vec![(0u32, parents.clone())];
        nodes.extend(parents.iter().map(|&p| (p, Vec::new())));
        let rows = layout(&nodes);
        let widest = rows
            .iter()
            .flat_map(|r| std::iter::once(&r.node).chain(&r.after))
            .map(|line| line.cells.len())
            .max()
            .unwrap_or(0);
        assert!(widest <= 2 * MAX_LANES + 2, "a row {widest} columns wide");
        let lines: usize = rows.iter().map(|r| 1 + r.after.len()).sum();
        assert!(lines < nodes.len() + 4 * MAX_LANES, "{lines} lines");
    }

    #[test]
    fn colours_follow_lanes_and_only_when_asked() {
        let rows = layout(&[(1, vec![0]), (2, vec![0]), (0, vec![])]);
        assert_eq!(rows[1].node.render(false), "| * ");
        assert_eq!(rows[1].node.render(true), "\x1b[31m|\x1b[m * ");
        assert_eq!(
            rows[1].after[0].render(true),
            "\x1b[31m|\x1b[m\x1b[32m/\x1b[m"
        );
    }
}
