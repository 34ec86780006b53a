//! `browse` in a real terminal: tmux runs a shell on a pseudo-terminal of 120 by 40 (or
//! wider), the test types into it (`send-keys`) and reads the screen (`capture-pane`),
//! driving the real binary on a real repository. Every wait polls the screen until the text is
//! there (or fails after a minute with the screen in the message); nothing is timed.

use std::time::{Duration, Instant};

use crate::common;
use common::claude::ClaudeSession;
use common::tmux::Tmux;
use common::{Repo, DEFAULT_TIMEOUT};

/// Two checkpoints of `a.txt` ("one", then "two"), and "three" unsaved in the worktree.
fn history() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.save_forced("first");
    repo.write("a.txt", b"two\n");
    repo.save_forced("second");
    repo.write("a.txt", b"three\n");
    repo
}

fn start_browse(repo: &Repo, env: &[(&str, &str)]) -> Tmux {
    start_browse_on(repo, env, 2)
}

fn start_browse_on(repo: &Repo, env: &[(&str, &str)], checkpoints: usize) -> Tmux {
    start_browse_sized(repo, env, checkpoints, 120)
}

/// `browse` in a terminal `width` columns wide (and 40 rows), once it lists `checkpoints`.
fn start_browse_sized(repo: &Repo, env: &[(&str, &str)], checkpoints: usize, width: u16) -> Tmux {
    let tmux = Tmux::start_with_width(repo, env, width);
    tmux.type_text(&format!("{} browse", common::BIN));
    tmux.press("Enter");
    tmux.wait_for(&format!("Checkpoints ({checkpoints})"));
    tmux
}

/// The user's save of `a.txt` ("one") and `notes.txt`, then a Claude session: one
/// prompt, whose tool calls write "agent" into `a.txt` and create `b.txt`; then the user
/// edits `notes.txt` and leaves it unsaved. Four checkpoints: the save, the prompt's,
/// one per tool call.
fn session_history() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.write("notes.txt", b"mine\n");
    repo.save_forced("start");
    repo.write("notes.txt", b"mine, before the prompt\n");
    let mut claude = ClaudeSession::new(&repo, "4f2a9c1d-5e6f-4a0b-9c8d-7e6f5a4b3c2d");
    claude.prompt("please fix the parser");
    claude.write("a.txt", b"agent\n");
    claude.write("b.txt", b"new\n");
    repo.write("notes.txt", b"mine, edited\n");
    repo
}

/// The checkpoint a status line names after `marker`, up to the next space.
#[track_caller]
fn named_after(screen: &str, marker: &str) -> String {
    screen
        .split(marker)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("nothing after {marker:?}:\n{screen}"))
        .to_string()
}

#[test]
fn restore_only_a_sessions_files_from_the_prompt_with_confirmation() {
    let repo = session_history();
    let tmux = start_browse_on(&repo, &[], 4);
    // The search finds the prompt's own checkpoint and opens the fold it is in.
    tmux.press("/");
    tmux.type_text("fix the parser");
    tmux.press("Enter");
    tmux.wait_for("Found 'fix the parser'");
    tmux.press("s");
    tmux.wait_for("Put back the files session 4f2a9c1d");
    tmux.press("y");
    let screen = tmux.wait_for("Restored the files of session 4f2a9c1d from");
    // What the session's tool calls wrote is as it was at the prompt; the user's
    // unsaved edit, which the session never touched, is left as it is.
    assert_eq!(repo.read_string("a.txt"), "one\n");
    assert!(!repo.exists("b.txt"));
    assert_eq!(repo.read_string("notes.txt"), "mine, edited\n");
    // The worktree was saved first, as `restore --only-session` saves it.
    let safety = named_after(&screen, "unsaved changes saved as ");
    // That one, and the restore's result, saved as `restore --only-session` saves it.
    tmux.wait_for("Checkpoints (6)");
    tmux.press("q");
    tmux.assert_terminal_restored();
    repo.ok(&["restore", &safety]);
    assert_eq!(repo.read_string("a.txt"), "agent\n");
    assert_eq!(repo.read_string("b.txt"), "new\n");
}

#[test]
fn revert_a_step_then_its_whole_turn_with_confirmation() {
    let repo = session_history();
    let tmux = start_browse_on(&repo, &[], 4);
    // One step: the tool call that wrote a.txt.
    tmux.press("/");
    tmux.type_text("Write: a.txt");
    tmux.press("Enter");
    tmux.wait_for("Found 'Write: a.txt'");
    tmux.press("u");
    tmux.wait_for("Undo what checkpoint");
    tmux.press("y");
    let screen = tmux.wait_for("1 applied, 0 conflicting, 0 unchanged");
    assert_eq!(repo.read_string("a.txt"), "one\n");
    assert_eq!(repo.read_string("b.txt"), "new\n");
    assert_eq!(repo.read_string("notes.txt"), "mine, edited\n");
    let safety = named_after(&screen, "unsaved changes saved as ");
    // The list is read again with the safety checkpoint and the revert's result on top;
    // the prompt's fold the search opened is still open, and the step still selected:
    // h folds it again, onto the row that stands for the whole turn.
    tmux.wait_for("Checkpoints (6)");
    let screen = tmux.wait_for("Write: a.txt");
    assert!(screen.contains("before prompt 1"), "{screen}");
    tmux.press("h");
    tmux.wait_for("[prompt 1, 2 tool calls]");
    tmux.press("u");
    tmux.wait_for("Undo this prompt's turn");
    tmux.press("y");
    tmux.wait_for("1 applied, 0 conflicting, 1 unchanged");
    assert_eq!(repo.read_string("a.txt"), "one\n");
    assert!(!repo.exists("b.txt"));
    assert_eq!(repo.read_string("notes.txt"), "mine, edited\n");
    tmux.press("q");
    tmux.assert_terminal_restored();
    // The first revert's safety checkpoint holds the worktree from before it.
    repo.ok(&["restore", &safety]);
    assert_eq!(repo.read_string("a.txt"), "agent\n");
    assert_eq!(repo.read_string("b.txt"), "new\n");
}

#[test]
fn revert_one_files_change_in_a_step_with_confirmation() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.write("b.txt", b"b\n");
    repo.save_forced("start");
    repo.write("a.txt", b"a, changed\n");
    repo.write("b.txt", b"b, changed\n");
    repo.save_forced("both files");
    let step = repo.current();
    let tmux = start_browse(&repo, &[]);
    // The step is selected; x lists the files it changed, j moves to the second.
    tmux.press("x");
    tmux.wait_for("Revert which file's change?");
    tmux.press("j");
    tmux.press("Enter");
    tmux.wait_for("Revert b.txt in ");
    tmux.press("y");
    let screen = tmux.wait_for("Reverted b.txt in ");
    assert!(
        screen.contains(": 1 applied, 0 conflicting, 0 unchanged; saved as checkpoint "),
        "{screen}"
    );
    let result = named_after(&screen, "saved as checkpoint ").replace(';', "");
    tmux.wait_for("Checkpoints (3)");
    tmux.press("q");
    tmux.assert_terminal_restored();
    assert_eq!(repo.read_string("b.txt"), "b\n");
    assert_eq!(
        repo.read_string("a.txt"),
        "a, changed\n",
        "not chosen: kept"
    );
    // Saved as the CLI's `revert <step> -- b.txt` saves it, on top of the step, named
    // after the short id browse showed.
    let log = repo.ok(&["log", "-n", "1"]).stdout;
    assert!(
        log.contains(&format!("revert of {} -- b.txt (1 file)", &step[..7])),
        "{log}"
    );
    assert!(repo.current().starts_with(&result), "{result}");
    assert_eq!(repo.parents(&repo.current()), [step]);
    assert_eq!(repo.json(&["status", "--json"])["clean"], true);
}

#[test]
fn navigate_show_a_diff_restore_with_confirmation_and_quit() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    assert!(tmux.alternate_screen());
    // The newest is selected, its diff beside the list.
    tmux.wait_for("+two");
    tmux.press("j");
    let screen = tmux.wait_for("+one");
    assert!(screen.contains("show "), "{screen}");
    // A restore asks first; anything but y leaves everything as it was.
    tmux.press("r");
    tmux.wait_for("Restore the worktree to checkpoint");
    tmux.press("n");
    tmux.wait_for("Cancelled");
    assert_eq!(repo.read_string("a.txt"), "three\n");
    tmux.press("r");
    tmux.wait_for("Restore the worktree to checkpoint");
    tmux.press("y");
    let screen = tmux.wait_for("Restored checkpoint");
    assert_eq!(repo.read_string("a.txt"), "one\n");
    // The unsaved "three" went into a safety checkpoint first, as `restore` does; the
    // list is read again and shows it.
    tmux.wait_for("Checkpoints (3)");
    let safety = screen
        .split("unsaved changes saved as ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no safety checkpoint named:\n{screen}"))
        .to_string();
    tmux.press("q");
    tmux.assert_terminal_restored();
    repo.ok(&["restore", &safety]);
    assert_eq!(repo.read_string("a.txt"), "three\n");
}

#[test]
fn ctrl_c_leaves_the_terminal_as_it_was() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    tmux.press("C-c");
    tmux.assert_terminal_restored();
    assert_eq!(repo.read_string("a.txt"), "three\n");
}

#[test]
fn a_panic_restores_the_terminal_and_is_reported() {
    let repo = history();
    let tmux = start_browse(&repo, &[("GIT_CHECKPOINT_PANIC", "browse-key")]);
    tmux.press("j");
    let screen = tmux.wait_for("internal error");
    assert!(screen.contains("test panic at browse-key"), "{screen}");
    tmux.assert_terminal_restored();
}

#[test]
fn off_a_terminal_browse_refuses_in_one_line() {
    let repo = history();
    let out = repo.run(&["browse"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("browse needs a terminal"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

/// The left pane of a screen: each line up to where the two panes meet.
fn list_pane(screen: &str) -> String {
    screen
        .lines()
        .map(|line| line.split("││").next().unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The record and diff are made off the UI thread and shown as far as they are made,
/// with a busy marker, and keys act meanwhile. The builder is held after its first piece
/// (the record) for two minutes, longer than any wait here.
#[test]
fn keys_act_while_the_diff_is_built_and_q_quits() {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    let first = repo.save_forced("first");
    repo.write("a.txt", b"two\n");
    let second = repo.save_forced("second");
    let tmux = start_browse(
        &repo,
        &[("GIT_CHECKPOINT_PAUSE", "browse-detail-sent:120000")],
    );
    let screen = tmux.wait_for(&format!("checkpoint {second}"));
    assert!(screen.contains("building"), "{screen}");
    assert!(!screen.contains("+two"), "{screen}");
    // j selects the older checkpoint at once, while the newer one's diff is still held.
    tmux.press("j");
    tmux.wait_for(&format!("show {}", &first[..7]));
    tmux.press("q");
    tmux.assert_terminal_restored();
}

/// An action shows that it is running, and a key typed meanwhile is kept: the `q`
/// typed during a drop quits once the drop is done, and the drop is whole.
#[test]
fn a_q_typed_during_a_drop_quits_after_it() {
    let repo = history();
    let tmux = start_browse(&repo, &[("GIT_CHECKPOINT_PAUSE", "op-recorded:3000")]);
    tmux.press("j");
    tmux.press("d");
    tmux.wait_for("Drop checkpoint");
    tmux.press("y");
    tmux.wait_for("Dropping checkpoint");
    tmux.press("q");
    tmux.assert_terminal_restored();
    assert_eq!(repo.log_ids(true).len(), 1);
}

/// A drop in browse is the command's drop: recorded in the operation log and kept for
/// undo, so that `undo` on the command line brings the checkpoint back.
#[test]
fn a_drop_in_browse_is_undone_by_undo() {
    let repo = history();
    let before = repo.log_ids(true);
    let tmux = start_browse(&repo, &[]);
    tmux.press("j");
    tmux.press("d");
    tmux.wait_for("Drop checkpoint");
    tmux.press("y");
    tmux.wait_for("Dropped checkpoint");
    tmux.wait_for("Checkpoints (1)");
    tmux.press("q");
    tmux.assert_terminal_restored();
    assert_eq!(repo.log_ids(true).len(), 1);
    let log = repo.ok(&["op", "log"]).stdout;
    assert!(log.contains("drop "), "{log}");
    repo.ok(&["undo"]);
    assert_eq!(repo.log_ids(true), before);
    assert_eq!(repo.read_string("a.txt"), "three\n");
}

/// `U` undoes the newest operation, as `undo` does, after asking which one it is: a
/// restore made in browse is undone, the unsaved work it had saved first back in the
/// worktree, and the status line says what was undone.
#[test]
fn capital_u_undoes_a_restore_made_in_browse() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    tmux.press("j");
    tmux.press("r");
    tmux.wait_for("Restore the worktree to checkpoint");
    tmux.press("y");
    tmux.wait_for("Restored checkpoint");
    tmux.wait_for("Checkpoints (3)");
    assert_eq!(repo.read_string("a.txt"), "one\n");
    // Anything but y leaves it.
    tmux.press("U");
    tmux.wait_for("Undo op 1 (restore to ");
    tmux.press("n");
    tmux.wait_for("Cancelled");
    assert_eq!(repo.read_string("a.txt"), "one\n");
    tmux.press("U");
    tmux.wait_for("Undo op 1 (restore to ");
    tmux.press("y");
    let screen = tmux.wait_for("Undid op 1: restore to ");
    assert!(
        screen.contains("Restored the worktree as checkpoint"),
        "{screen}"
    );
    assert_eq!(repo.read_string("a.txt"), "three\n");
    tmux.press("q");
    tmux.assert_terminal_restored();
    let log = repo.ok(&["op", "log"]).stdout;
    assert!(log.contains("undo of op 1 (restore to "), "{log}");
    // Nothing is left to undo: U says so, and asks nothing.
    let tmux = start_browse_on(&repo, &[], 3);
    tmux.press("U");
    tmux.wait_for("error: nothing to undo");
    tmux.press("q");
    tmux.assert_terminal_restored();
}

/// A folded prompt's row stands for its whole turn: the detail shows what the turn
/// changed, from the prompt's checkpoint to its last tool call (both tool calls' files),
/// not only what the last tool call changed.
#[test]
fn a_folded_prompt_shows_its_whole_turn() {
    let repo = session_history();
    let tmux = start_browse_on(&repo, &[], 4);
    let screen = tmux.wait_for("diff --git a/b.txt b/b.txt");
    assert!(screen.contains("▸"), "the prompt starts folded:\n{screen}");
    let screen = tmux.wait_for("diff --git a/a.txt b/a.txt");
    assert!(screen.contains("+agent"), "{screen}");
    // Unfolded, its newest row is one step again: the last tool call's own change.
    tmux.press("l");
    let start = Instant::now();
    while tmux.screen().contains("a/a.txt") {
        assert!(start.elapsed() < DEFAULT_TIMEOUT, "{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.wait_for("diff --git a/b.txt b/b.txt");
    tmux.press("q");
    tmux.assert_terminal_restored();
}

/// The list takes the width its rows need (up to a share of the terminal), so that on
/// a wide terminal a folded prompt's row reads its prompt in full.
#[test]
fn on_a_wide_terminal_a_folded_prompt_reads_its_prompt() {
    let repo = session_history();
    let tmux = start_browse_sized(&repo, &[], 4, 160);
    let start = Instant::now();
    loop {
        let list = list_pane(&tmux.screen());
        if list.contains("please fix the parser") {
            break;
        }
        assert!(start.elapsed() < DEFAULT_TIMEOUT, "the list:\n{list}");
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.press("q");
    tmux.assert_terminal_restored();
}

/// The age the list shows of its first row ("3 seconds ago").
fn first_age(screen: &str) -> Option<String> {
    let list = list_pane(screen);
    let row = list.lines().find(|line| line.contains(" ago"))?;
    let words: Vec<&str> = row.split_whitespace().collect();
    let ago = words.iter().position(|w| *w == "ago")?;
    Some(words[ago.checked_sub(2)?..=ago].join(" "))
}

/// Ages are counted from the time the screen is drawn, not from when browse started.
#[test]
fn ages_move_on_while_browse_is_open() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    let screen = tmux.wait_for(" ago");
    let before = first_age(&screen).unwrap_or_else(|| panic!("no age:\n{screen}"));
    let start = Instant::now();
    loop {
        let screen = tmux.screen();
        if first_age(&screen).is_some_and(|age| age != before) {
            break;
        }
        assert!(
            start.elapsed() < DEFAULT_TIMEOUT,
            "still {before:?}:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux.press("q");
    tmux.assert_terminal_restored();
}

/// R reads the list again: a checkpoint saved while browse is open shows (the
/// selection stays where it was, as after an action).
#[test]
fn capital_r_shows_checkpoints_saved_meanwhile() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    tmux.wait_for("+two");
    repo.save("third");
    tmux.press("R");
    tmux.wait_for("Checkpoints (3)");
    tmux.press("k");
    tmux.wait_for("+three");
    tmux.press("q");
    tmux.assert_terminal_restored();
}
