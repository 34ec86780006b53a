//! `browse` in a real terminal: tmux runs a shell on a pseudo-terminal of 120 by 40,
//! the test types into it (`send-keys`) and reads the screen (`capture-pane`), driving
//! the real binary on a real repository. Every wait polls the screen until the text is
//! there (or fails after a minute with the screen in the message); nothing is timed.

use crate::common;
use common::claude::ClaudeSession;
use common::tmux::Tmux;
use common::Repo;

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
    let tmux = Tmux::start(repo, env);
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
    tmux.wait_for("Checkpoints (5)");
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
    // The list is read again with the safety checkpoint on top; the prompt's fold the
    // search opened is still open, and the step still selected: h folds it again, onto
    // the row that stands for the whole turn.
    tmux.wait_for("Checkpoints (5)");
    let screen = tmux.wait_for("Write: a.txt");
    assert!(screen.contains("before prompt 1"), "{screen}");
    tmux.press("h");
    tmux.wait_for("[prompt, 2 tool calls]");
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
