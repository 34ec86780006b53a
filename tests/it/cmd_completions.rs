//! Tab completion as a user meets it: the script `completions bash` prints, loaded into a
//! real bash together with git's own completion (git-completion.bash), completing
//! `git checkpoint …` and `git-checkpoint …` lines against a real store. Bash's
//! completion variables (COMP_WORDS, COMP_CWORD, COMP_LINE, COMP_POINT) are set as
//! readline sets them, word breaks at `:` included, and the function `complete -p`
//! registered for the command is called; one test types into a real bash in tmux to see
//! what readline itself does with an empty answer (no file names after -m).

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// git's bash completion, as the git package installs it.
const GIT_COMPLETION: &str = "/usr/share/bash-completion/completions/git";

const SESSION: &str = "7b3e9f10-2c4d-4e5f-9a8b-0c1d2e3f4a5b";

/// The id of the one tool call of [`SESSION`].
const TOOL_CALL: &str = "toolu_01Louder";

/// A repository with two branches, a fetched `origin/main`, an attachment and a
/// two-prompt Claude session with one tool call in its second turn; returns it with the short ids of the newest checkpoint and
/// of the one with the attachment.
fn repo_with_history() -> (Repo, String, String) {
    let r = Repo::new();
    r.write("notes.txt", b"one\n");
    r.save("first");
    let bare = r.sb.root.join("remote.git");
    r.sb.git(&r.sb.root, &["init", "-q", "--bare", "remote.git"]);
    r.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    r.ok(&["push", "-q", "origin"]);
    r.ok(&["fetch", "-q", "origin"]);
    r.ok(&["fork", "-q", "-b", "experiment", "@"]);
    r.write("transcript.jsonl", b"{}\n");
    let attached = r.save_json(&["-m", "with a transcript", "--attach", "transcript.jsonl"]);
    let attached = attached["id"].as_str().unwrap()[..7].to_string();
    for (n, text) in [(1, "add a greeting"), (2, "make it louder")] {
        r.write("notes.txt", format!("prompt {n}\n").as_bytes());
        let payload = json!({
            "hook_event_name": "UserPromptSubmit",
            "prompt": text,
            "session_id": SESSION,
            "transcript_path": r.p("transcript.jsonl"),
            "cwd": r.dir,
            "permission_mode": "default",
        });
        hook_answers(&r.sb, &r.dir, "claude", payload.to_string().as_bytes(), "");
    }
    // A tool call of prompt 2's turn: `<session>:<tool call id>` names its checkpoint.
    r.write("notes.txt", b"LOUDER\n");
    let payload = json!({
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": r.p("notes.txt")},
        "tool_use_id": TOOL_CALL,
        "session_id": SESSION,
        "transcript_path": r.p("transcript.jsonl"),
        "cwd": r.dir,
    });
    hook_answers(&r.sb, &r.dir, "claude", payload.to_string().as_bytes(), "");
    r.write("notes.txt", b"last\n");
    let newest = r.save("newest edit");
    (r, newest[..7].to_string(), attached)
}

/// Runs `script` in a bash that has git's completion and ours loaded, with the binary on
/// PATH as `git-checkpoint` (as git finds it for `git checkpoint`). `comp '<line>'` sets
/// the completion variables as readline does for the line with the cursor at its end
/// (words split at blanks and at `:`, bash's COMP_WORDBREAKS) and prints what the
/// function registered for the line's command leaves in COMPREPLY, one per line.
fn bash(r: &Repo, script: &str) -> String {
    assert!(
        Path::new(GIT_COMPLETION).exists(),
        "{GIT_COMPLETION} is missing: install git's bash completion (.ci/run does)"
    );
    let ours = r.sb.root.join("git-checkpoint.bash");
    fs::write(&ours, r.ok(&["completions", "bash"]).stdout_raw).unwrap();
    let prelude = format!(
        r#"source '{GIT_COMPLETION}'
source '{ours}'
comp() {{
    COMP_LINE=$1 COMP_POINT=${{#1}} COMP_WORDS=()
    local -a blanks
    read -ra blanks <<<"$1"
    [[ $1 == *' ' ]] && blanks+=("")
    local word
    for word in "${{blanks[@]}}"; do
        while [[ $word == *:* ]]; do
            [[ -n ${{word%%:*}} ]] && COMP_WORDS+=("${{word%%:*}}")
            COMP_WORDS+=(":")
            word=${{word#*:}}
        done
        COMP_WORDS+=("$word")
    done
    COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
    local spec fn
    spec=$(complete -p "${{COMP_WORDS[0]}}")
    fn=${{spec##*-F }}
    fn=${{fn%% *}}
    COMPREPLY=()
    "$fn" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}" 2>/dev/null
    printf '%s\n' "${{COMPREPLY[@]}}"
}}
"#,
        ours = ours.display()
    );
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    r.sb.isolate(&mut cmd);
    cmd.env("PATH", path).current_dir(&r.dir).args([
        "--norc",
        "--noprofile",
        "-c",
        &format!("{prelude}{script}"),
    ]);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    out.stdout
}

/// The candidates `comp` printed for `line`, trailing spaces dropped.
fn complete(r: &Repo, line: &str) -> Vec<String> {
    bash(r, &format!("comp '{line}'"))
        .lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn restore_and_switch_complete_what_the_store_holds_through_git_and_directly() {
    let (r, newest, _) = repo_with_history();
    for git in ["git checkpoint", "git-checkpoint"] {
        let restore = complete(&r, &format!("{git} restore "));
        for expected in ["@", "main", "experiment", "origin/main", newest.as_str()] {
            assert!(
                restore.iter().any(|c| c == expected),
                "{git} restore <TAB> lacks {expected}: {restore:?}"
            );
        }
        assert!(
            restore.iter().any(|c| c == &format!("{}:", &SESSION[..8])),
            "{git} restore <TAB> lacks the session: {restore:?}"
        );
        assert!(!restore.iter().any(|c| c == "notes.txt"), "{restore:?}");
        // What was typed narrows it.
        assert_eq!(
            complete(&r, &format!("{git} restore ex")),
            ["experiment"],
            "{git}"
        );
        assert_eq!(
            complete(&r, &format!("{git} show ori")),
            ["origin/main"],
            "{git}"
        );
        // A checkpoint id, as its prefix is typed.
        assert_eq!(
            complete(&r, &format!("{git} diff {}", &newest[..5])),
            [newest.as_str()],
            "{git}"
        );

        // `switch` takes a branch, nothing else.
        let mut switch = complete(&r, &format!("{git} switch "));
        switch.sort();
        assert_eq!(switch, ["experiment", "main"], "{git}");
    }
}

#[test]
fn session_revisions_complete_after_the_colon_bash_splits_at() {
    let (r, _, _) = repo_with_history();
    let short = &SESSION[..8];
    for git in ["git checkpoint", "git-checkpoint"] {
        // Bash hands `<s>:pr` over as three words and replaces only the last one, so
        // the candidates are what follows the colon.
        let got = complete(&r, &format!("{git} restore {short}:pr"));
        assert_eq!(got, ["prompt1", "prompt2"], "{git}");
        let got = complete(&r, &format!("{git} restore {short}:prompt2"));
        assert_eq!(got, ["prompt2"], "{git}");
    }
    // And the binary itself answers with the whole revision and the prompt's text (what
    // zsh and fish show beside it).
    let mut cmd = r.sb.bin_cmd(
        &r.dir,
        &[
            "--".to_string(),
            "git-checkpoint".to_string(),
            "show".to_string(),
            format!("{short}:"),
        ],
    );
    cmd.env("GIT_CHECKPOINT_COMPLETE", "fish");
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stdout,
        format!(
            "{short}:prompt1\tadd a greeting\n{short}:prompt2\tmake it louder\n\
             {short}:turn1\tturn of prompt 1: add a greeting\n\
             {short}:turn2\tturn of prompt 2: make it louder\n\
             {short}:{TOOL_CALL}\t{}\n",
            tool_message(&r)
        )
    );
}

/// The message of the tool call's checkpoint, as `log` has it.
fn tool_message(r: &Repo) -> String {
    r.log_json(false)
        .iter()
        .find(|c| c["meta"]["tool_use_id"] == TOOL_CALL)
        .and_then(|c| c["message"].as_str())
        .expect("the tool call's checkpoint")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Issue 39, item 4: `turn<N>` and tool-call ids complete after `<session>:` too.
#[test]
fn turns_and_tool_call_ids_complete_after_the_session() {
    let (r, _, _) = repo_with_history();
    let short = &SESSION[..8];
    for git in ["git checkpoint", "git-checkpoint"] {
        let got = complete(&r, &format!("{git} show {short}:tu"));
        assert_eq!(got, ["turn1", "turn2"], "{git}");
        let got = complete(&r, &format!("{git} restore {short}:toolu"));
        assert_eq!(got, [TOOL_CALL], "{git}");
        let mut all = complete(&r, &format!("{git} diff {short}:"));
        all.sort();
        assert_eq!(
            all,
            ["prompt1", "prompt2", TOOL_CALL, "turn1", "turn2"],
            "{git}"
        );
    }
}

#[test]
fn attachment_names_complete_for_the_revision_given() {
    let (r, _, attached) = repo_with_history();
    for git in ["git checkpoint", "git-checkpoint"] {
        assert_eq!(
            complete(&r, &format!("{git} attachment {attached} ")),
            ["transcript.jsonl"],
            "{git}"
        );
        // The first checkpoint has none; an unknown revision offers nothing, quietly.
        assert!(complete(&r, &format!("{git} attachment main ")).is_empty());
        assert!(complete(&r, &format!("{git} attachment nosuch ")).is_empty());
    }
}

#[test]
fn subcommands_and_options_still_complete() {
    let (r, _, _) = repo_with_history();
    for git in ["git checkpoint", "git-checkpoint"] {
        assert_eq!(complete(&r, &format!("{git} resto")), ["restore"], "{git}");
        assert_eq!(
            complete(&r, &format!("{git} restore --d")),
            ["--dry-run"],
            "{git}"
        );
        assert!(complete(&r, &format!("{git} hooks install ")).contains(&"claude".to_string()));
    }
    // git's own `-C <dir>` is passed on: the store of that worktree is read.
    let out = bash(
        &r,
        &format!(
            "cd / && comp 'git -C {} checkpoint switch m'",
            r.dir.display()
        ),
    );
    assert_eq!(out.trim_end(), "main");
}

#[test]
fn a_message_completes_to_nothing_and_turns_file_names_off() {
    let (r, _, _) = repo_with_history();
    for git in ["git checkpoint", "git-checkpoint"] {
        for line in ["save -m ", "save --message ", "save -m not"] {
            assert!(
                complete(&r, &format!("{git} {line}")).is_empty(),
                "{git} {line}"
            );
        }
    }
}

/// A real interactive bash in tmux with git's completion and ours loaded, in the
/// worktree, with the binary on PATH; the tmux server goes when dropped.
struct Terminal<'r> {
    r: &'r Repo,
    socket: std::path::PathBuf,
}

impl<'r> Terminal<'r> {
    fn start(r: &'r Repo) -> Terminal<'r> {
        let script = r.sb.root.join("git-checkpoint.bash");
        fs::write(&script, r.ok(&["completions", "bash"]).stdout_raw).unwrap();
        let rc = r.sb.root.join("bashrc");
        fs::write(
            &rc,
            format!(
                "PS1='$ '\nexport GIT_PAGER=cat\nsource '{GIT_COMPLETION}'\nsource '{}'\n",
                script.display()
            ),
        )
        .unwrap();
        let bin_dir = Path::new(BIN).parent().unwrap();
        let terminal = Terminal {
            r,
            socket: r.sb.root.join("tmux.sock"),
        };
        let shell = format!(
            "cd '{}' && PATH='{}':\"$PATH\" exec bash --noprofile --rcfile '{}' -i",
            r.dir.display(),
            bin_dir.display(),
            rc.display()
        );
        let out = terminal.tmux(&["new-session", "-d", "-x", "200", "-y", "20", &shell]);
        assert_eq!(out.code, 0, "{out}");
        // Keys typed before readline is up would be echoed raw.
        terminal.wait_for_screen("$");
        terminal
    }

    fn tmux(&self, args: &[&str]) -> Out {
        let mut cmd = Command::new("tmux");
        self.r.sb.isolate(&mut cmd);
        cmd.arg("-S").arg(&self.socket).args(args);
        run_cmd(cmd, DEFAULT_TIMEOUT)
    }

    /// Types `keys` (tmux key names: `Tab`, `Enter`, or text), then `x`, and returns the
    /// last prompt line once it ends with the `x` (so every key before it was handled).
    fn type_then_x(&self, keys: &[&str]) -> String {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        args.push("x");
        self.tmux(&args);
        let screen = self.wait_for_screen("x");
        screen
            .lines()
            .rev()
            .find(|l| l.starts_with("$ "))
            .unwrap_or_default()
            .trim_end()
            .to_string()
    }

    /// Empties the line being edited and clears the screen.
    fn clear_line(&self) {
        self.tmux(&["send-keys", "C-u", "clear", "Enter"]);
        self.wait_for_screen("$");
    }

    /// The pane's text once its last prompt line ends with `end` (keys are handled in
    /// order, so then everything typed before has been).
    fn wait_for_screen(&self, end: &str) -> String {
        let started = Instant::now();
        loop {
            let screen = self.tmux(&["capture-pane", "-p"]).stdout;
            let last = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default()
                .trim_end()
                .to_string();
            if last.starts_with("$") && last.ends_with(end) {
                return screen;
            }
            assert!(
                started.elapsed() < DEFAULT_TIMEOUT,
                "the terminal never showed a line ending in {end:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Terminal<'_> {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// Readline, not the completion function, falls back to file names when a function
/// answers nothing and git registered `-o default`: only a real terminal shows whether
/// the script turned that off. Types `git checkpoint save -m uni<TAB><TAB>x` into bash in
/// tmux, in a worktree whose only file a fallback would have inserted.
#[test]
fn no_file_names_after_m_in_a_real_terminal() {
    let r = Repo::new();
    r.write("uniquefile.txt", b"x\n");
    r.save("first");
    let terminal = Terminal::start(&r);
    for (line, tabs, typed) in [
        // `.git` is a file name too: a prefix that only one file has.
        (
            "git checkpoint save -m uni",
            2,
            "git checkpoint save -m unix",
        ),
        (
            "git-checkpoint save -m uni",
            2,
            "git-checkpoint save -m unix",
        ),
        // The control: a file name does complete where a file is asked for.
        (
            "git-checkpoint save --attach unique",
            1,
            "git-checkpoint save --attach uniquefile.txt x",
        ),
    ] {
        let mut keys = vec![line];
        keys.extend(std::iter::repeat_n("Tab", tabs));
        assert_eq!(terminal.type_then_x(&keys), format!("$ {typed}"));
        terminal.clear_line();
    }
}

/// Issue 39, item 4: readline replaces only what follows the last `:` of the word (bash's
/// COMP_WORDBREAKS), whatever COMP_WORDS says: `<session>:<TAB>` must not insert a
/// second colon, in a real bash in tmux.
#[test]
fn a_tab_after_the_sessions_colon_adds_no_second_colon_in_a_real_terminal() {
    let (r, _, _) = repo_with_history();
    let short = &SESSION[..8];
    let terminal = Terminal::start(&r);
    for git in ["git checkpoint", "git-checkpoint"] {
        for (typed, keys, expected) in [
            // The session prefix completes to `<session>:` (no space: more follows).
            (
                format!("{git} restore {}", &short[..4]),
                vec!["Tab"],
                format!("{git} restore {short}:x"),
            ),
            // After the colon: prompts, turns and the tool call share no prefix, so
            // nothing is inserted; never a second colon.
            (
                format!("{git} restore {short}:"),
                vec!["Tab"],
                format!("{git} restore {short}:x"),
            ),
            (
                format!("{git} restore {short}:pr"),
                vec!["Tab"],
                format!("{git} restore {short}:promptx"),
            ),
            (
                format!("{git} show {short}:tu"),
                vec!["Tab"],
                format!("{git} show {short}:turnx"),
            ),
            (
                format!("{git} show {short}:to"),
                vec!["Tab"],
                format!("{git} show {short}:{TOOL_CALL} x"),
            ),
        ] {
            let mut all = vec![typed.as_str()];
            all.extend(keys);
            assert_eq!(terminal.type_then_x(&all), format!("$ {expected}"));
            terminal.clear_line();
        }
    }
}

/// Finding 2 (issue 34), defence in depth: a fetched branch whose name a shell would run
/// (`origin/fix-$(touch${IFS}FILE)`, in a store fetched before names were checked)
/// completes quoted, so that Enter runs git-checkpoint with that name and nothing else.
#[test]
fn a_candidate_that_a_shell_would_run_completes_quoted_in_a_real_terminal() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let id = r.save("first");
    let hostile = "origin/fix-$(touch${IFS}PWNED)";
    {
        let db = raw_store::open(&r.store_path());
        let txn = db.begin_write().unwrap();
        txn.open_table(raw_store::REMOTE_BRANCHES)
            .unwrap()
            .insert(hostile, u128::from_str_radix(&id, 16).unwrap())
            .unwrap();
        txn.commit().unwrap();
    }
    let terminal = Terminal::start(&r);
    for git in ["git-checkpoint", "git checkpoint"] {
        let line = terminal.type_then_x(&[&format!("{git} show origin/fi"), "Tab"]);
        assert!(
            line.contains("touch"),
            "the hostile name did not complete at all: {line}"
        );
        // Enter, in place of the `x`.
        terminal.tmux(&["send-keys", "BSpace", "Enter"]);
        terminal.wait_for_screen("$");
        // The command has finished when the next prompt shows.
        assert!(
            !r.exists("PWNED"),
            "Enter after completing `{git} show origin/fi` ran the name's command: {line}"
        );
        terminal.clear_line();
    }
}

#[test]
fn zsh_and_fish_scripts_parse() {
    let r = Repo::new();
    for (shell, flag) in [("zsh", "-n"), ("fish", "--no-execute")] {
        let script = r.sb.root.join(format!("completion.{shell}"));
        fs::write(&script, r.ok(&["completions", shell]).stdout_raw).unwrap();
        let mut cmd = Command::new(shell);
        r.sb.isolate(&mut cmd);
        cmd.arg(flag).arg(&script);
        let out = run_cmd(cmd, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "{shell} {flag}: {out}");
    }
}

#[test]
fn completing_never_writes_the_store_nor_makes_one() {
    let r = Repo::new();
    let store = r.p(".git/checkpoint/store.redb");
    assert!(complete(&r, "git checkpoint restore ").is_empty());
    assert!(!store.exists(), "a completion made a store");
    r.write("a.txt", b"a\n");
    r.save("first");
    let before = fs::read(&store).unwrap();
    assert_eq!(complete(&r, "git checkpoint switch "), ["main"]);
    assert_eq!(
        fs::read(&store).unwrap(),
        before,
        "a completion changed the store"
    );
}

#[test]
fn fish_completes_from_the_store_through_its_script() {
    let (r, _, _) = repo_with_history();
    let script = r.sb.root.join("git-checkpoint.fish");
    fs::write(&script, r.ok(&["completions", "fish"]).stdout_raw).unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let mut cmd = Command::new("fish");
    r.sb.isolate(&mut cmd);
    cmd.env(
        "PATH",
        format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    )
    .current_dir(&r.dir)
    .args([
        "--no-config",
        "-c",
        &format!(
            "source '{}'; complete -C 'git-checkpoint switch '; complete -C 'git checkpoint switch ex'",
            script.display()
        ),
    ]);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.contains(&"main\tbranch"), "{out}");
    assert!(lines.contains(&"experiment\tcurrent branch"), "{out}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("experiment")).count(),
        2,
        "{out}"
    );
}

#[test]
fn a_busy_store_offers_no_revisions_at_once() {
    let (r, _, _) = repo_with_history();
    // A save holding the store far longer than any test waits.
    r.write("notes.txt", b"held\n");
    let mut holder = spawn_paused(&r, &["save", "-m", "held"], "locked", 300_000);
    assert!(complete(&r, "git checkpoint switch ").is_empty());
    assert_eq!(complete(&r, "git checkpoint swi"), ["switch"]);
    assert!(
        holder.try_wait().unwrap().is_none(),
        "the completion waited for the save to end"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Killed mid-save, the store needs a recovery a completion does not make (it would
    // write); the next real command makes it, and completion is back.
    assert!(complete(&r, "git checkpoint switch ").is_empty());
    r.ok(&["status"]);
    let mut switch = complete(&r, "git checkpoint switch ");
    switch.sort();
    assert_eq!(switch, ["experiment", "main"]);
}
