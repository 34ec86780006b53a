//! Progress bars: on stderr under a terminal for a long save or restore, and nowhere
//! else (a pipe, `-q`, `--json`, stdout).
//!
//! A bar appears only once a stage has lasted half a second, so the runs that could draw
//! one are made slow: `GIT_CHECKPOINT_PAUSE=progress-file:40` sleeps 40 ms at each file
//! a bar counts. Those sleeps happen on rayon's threads, so every run here also sets
//! `RAYON_NUM_THREADS=1` (rayon's global pool, which save and restore use, honours it):
//! the pauses then add up to 40 x 40 ms = 1.6 s on any machine, where with one thread
//! per core they would be shared out and a many-core machine would finish before the bar
//! is due. Every "no bar" assertion has a control under the same conditions (same
//! repository, same pause, same terminal) that does draw one, so none of them can pass
//! merely because nothing was slow enough to draw. (The pause fires only where a bar is
//! in use, so a `-q` save is quick; were `-q` to stop turning the bar off, that save
//! would be as slow as the control and draw as it does.)

use crate::common;
use std::process::Command;
use std::time::Duration;

use common::*;

/// Each file a save or restore finishes pauses this long when a bar is in use, so the
/// operation outlasts the half second before a bar appears, in any build.
const SLOW: &str = "progress-file:40";
/// Files in the test repository; with [`SLOW`] and one thread, a stage lasts at least
/// `FILES * 40 ms`.
const FILES: u64 = 40;
const SLOW_STAGE: Duration = Duration::from_millis(FILES * 40);

fn long_repo() -> Repo {
    let r = Repo::new();
    rewrite_all(&r, 0);
    r
}

/// Gives every file new content, so that the next save has all of them to store.
fn rewrite_all(r: &Repo, seed: u64) {
    for i in 0..FILES {
        r.write(format!("f{i:02}.bin"), &pseudo_random(20_000, seed + i));
    }
}

/// Runs `shell_command` (with `BIN` standing for the binary) in the repository under a
/// pseudo-terminal made by script(1), on one rayon thread, pausing at `pause`; returns
/// what the terminal showed.
fn under_pty(r: &Repo, shell_command: &str, pause: &str) -> Out {
    let mut cmd = Command::new("script");
    r.sb.isolate(&mut cmd);
    cmd.args([
        "-qec",
        &shell_command.replace("BIN", &format!("'{BIN}'")),
        "/dev/null",
    ])
    .env("TERM", "xterm")
    .env("RAYON_NUM_THREADS", "1")
    .env("GIT_CHECKPOINT_PAUSE", pause)
    .current_dir(&r.dir);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_no_panic(&out, shell_command);
    assert_eq!(out.code, 0, "{shell_command}: {out}");
    out
}

/// The control for every "no bar" check: the same slow save, on the same terminal,
/// with nothing turning the bar off, draws one.
#[track_caller]
fn assert_a_plain_slow_save_draws_a_bar(r: &Repo, seed: u64) {
    rewrite_all(r, seed);
    let out = under_pty(r, "BIN save", SLOW);
    assert!(
        out.stdout.contains("Saving ["),
        "control: a slow save on a terminal drew no bar, so the checks without one \
         prove nothing: {:?}",
        out.stdout
    );
}

#[test]
fn a_long_save_and_restore_show_a_bar_on_a_terminal_and_never_on_stdout() {
    let r = long_repo();
    let first = r.save("first");
    rewrite_all(&r, 100);
    // stdout goes to a file outside the worktree (inside, the save would capture it).
    let saved_to = r.sb.root.join("saved.txt");
    let out = under_pty(
        &r,
        &format!("BIN save -m second > '{}'", saved_to.display()),
        SLOW,
    );
    // The pauses added up: the binary really ran its files on one thread.
    assert!(
        out.elapsed() >= SLOW_STAGE,
        "took {:?}: RAYON_NUM_THREADS=1 not honoured?",
        out.elapsed()
    );
    let screen = out.stdout;
    assert!(screen.contains("Saving ["), "no bar: {screen:?}");
    assert!(screen.contains(&format!("/{FILES} files")), "{screen:?}");
    assert!(
        screen.contains("MiB/s") || screen.contains("KiB/s"),
        "{screen:?}"
    );
    // stdout (redirected to a file) has only the result line.
    let saved = std::fs::read_to_string(&saved_to).unwrap();
    assert!(saved.starts_with("Saved checkpoint"), "{saved:?}");
    assert!(!saved.contains("Saving"), "{saved:?}");

    let restored_to = r.sb.root.join("restored.txt");
    let out = under_pty(
        &r,
        &format!("BIN restore {first} > '{}'", restored_to.display()),
        SLOW,
    );
    assert!(out.elapsed() >= SLOW_STAGE, "took {:?}", out.elapsed());
    assert!(out.stdout.contains("Restoring ["), "{:?}", out.stdout);
    let restored = std::fs::read_to_string(&restored_to).unwrap();
    assert!(restored.starts_with("Restored checkpoint"), "{restored:?}");
    assert!(!restored.contains('['), "{restored:?}");
}

#[test]
fn no_bar_with_quiet_or_json_or_without_a_terminal() {
    let r = long_repo();
    // Under a terminal, a save quicker than half a second draws nothing (the control
    // below is the same save made slow).
    let out = under_pty(&r, "BIN save", "");
    assert!(
        out.stdout.starts_with("Saved checkpoint"),
        "{:?}",
        out.stdout
    );
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);

    assert_a_plain_slow_save_draws_a_bar(&r, 100);

    // Not with -q or --json, with the same files, pause and terminal.
    rewrite_all(&r, 200);
    let out = under_pty(&r, "BIN save -q", SLOW);
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);
    assert_eq!(out.stdout, "", "-q prints nothing");
    rewrite_all(&r, 300);
    let out = under_pty(&r, "BIN save --json", SLOW);
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);
    assert!(out.stdout.trim_start().starts_with('{'), "{:?}", out.stdout);

    // stderr not a terminal while stdout is one: nothing, on stdout or in the file.
    rewrite_all(&r, 400);
    let errors_to = r.sb.root.join("errors.txt");
    let out = under_pty(&r, &format!("BIN save 2> '{}'", errors_to.display()), SLOW);
    assert!(
        out.stdout.starts_with("Saved checkpoint"),
        "{:?}",
        out.stdout
    );
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);
    let errors = std::fs::read_to_string(&errors_to).unwrap();
    assert_eq!(errors, "", "stderr, a file, got a bar");

    // Both streams pipes, with TERM set: nothing either.
    rewrite_all(&r, 500);
    let mut cmd = r.sb.bin_cmd(&r.dir, &["save"]);
    cmd.env("TERM", "xterm")
        .env("RAYON_NUM_THREADS", "1")
        .env("GIT_CHECKPOINT_PAUSE", SLOW);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stderr, "", "{out}");
    assert!(out.stdout.starts_with("Saved checkpoint"), "{out}");

    // And the control again, last, so the conditions held throughout.
    assert_a_plain_slow_save_draws_a_bar(&r, 600);
}
