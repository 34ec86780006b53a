//! Progress bars: on stderr under a terminal for a long save or restore, and nowhere
//! else (a pipe, `-q`, `--json`, stdout).

mod common;

use std::process::Command;

use common::*;

/// Each file a save or restore finishes pauses this long when a bar is in use, so the
/// operation outlasts the half second before a bar appears, in any build.
const SLOW: &str = "progress-file:40";

fn long_repo() -> Repo {
    let r = Repo::new();
    for i in 0..40 {
        r.write(format!("f{i:02}.bin"), &pseudo_random(20_000, i));
    }
    r
}

/// Runs `shell_command` (with `BIN` standing for the binary) in the repository under a
/// pseudo-terminal made by script(1); returns what the terminal showed.
fn under_pty(r: &Repo, shell_command: &str) -> Out {
    under_pty_pausing(r, shell_command, SLOW)
}

fn under_pty_pausing(r: &Repo, shell_command: &str, pause: &str) -> Out {
    let mut cmd = Command::new("script");
    r.sb.isolate(&mut cmd);
    cmd.args([
        "-qec",
        &shell_command.replace("BIN", &format!("'{BIN}'")),
        "/dev/null",
    ])
    .env("TERM", "xterm")
    .env("GIT_CHECKPOINT_PAUSE", pause)
    .current_dir(&r.dir);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_no_panic(&out, shell_command);
    assert_eq!(out.code, 0, "{shell_command}: {out}");
    out
}

#[test]
fn a_long_save_and_restore_show_a_bar_on_a_terminal_and_never_on_stdout() {
    let r = long_repo();
    let first = r.save("first");
    for i in 0..40 {
        r.write(format!("f{i:02}.bin"), &pseudo_random(20_000, 100 + i));
    }
    // stdout goes to a file outside the worktree (inside, the save would capture it).
    let saved_to = r.sb.root.join("saved.txt");
    let out = under_pty(
        &r,
        &format!("BIN save -m second > '{}'", saved_to.display()),
    );
    let screen = out.stdout;
    assert!(screen.contains("Saving ["), "no bar: {screen:?}");
    assert!(screen.contains("/40 files"), "{screen:?}");
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
    );
    assert!(out.stdout.contains("Restoring ["), "{:?}", out.stdout);
    let restored = std::fs::read_to_string(&restored_to).unwrap();
    assert!(restored.starts_with("Restored checkpoint"), "{restored:?}");
    assert!(!restored.contains('['), "{restored:?}");
}

#[test]
fn no_bar_with_quiet_or_json_or_without_a_terminal() {
    let r = long_repo();
    // Under a terminal, a save quicker than half a second draws nothing.
    let out = under_pty_pausing(&r, "BIN save", "");
    assert!(
        out.stdout.starts_with("Saved checkpoint"),
        "{:?}",
        out.stdout
    );
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);
    // Nor with -q or --json, however long it takes.
    r.write("f03.bin", b"changed");
    let out = under_pty(&r, "BIN save -q");
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);
    r.write("f00.bin", b"changed");
    let out = under_pty(&r, "BIN save --json");
    assert!(!out.stdout.contains("Saving"), "{:?}", out.stdout);
    assert!(out.stdout.trim_start().starts_with('{'), "{:?}", out.stdout);

    // stderr a pipe: nothing, even with TERM set and the same slow save.
    r.write("f01.bin", &pseudo_random(100_000, 7));
    r.write("f02.bin", &pseudo_random(100_000, 8));
    let mut cmd = r.sb.bin_cmd(&r.dir, &["save"]);
    cmd.env("TERM", "xterm").env("GIT_CHECKPOINT_PAUSE", SLOW);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stderr, "", "{out}");
    assert!(out.stdout.starts_with("Saved checkpoint"), "{out}");
}
