//! Whether git finds `git-checkpoint` where every hook needs it. The hooks run `git
//! checkpoint …`, and git runs `git-checkpoint` from its exec-path or PATH: where it
//! finds none, each hook prints "git: 'checkpoint' is not a git command" into the
//! agent and saves nothing. `cargo install` puts the program in `~/.cargo/bin`, which a
//! shell's PATH may lack (the first day of a new user: every hook failed so).
//!
//! The check reads the PATH doctor runs with, which is the agent's when doctor runs
//! where the agent is started (its terminal).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{Check, Finding, Status};

/// The program git runs for `git checkpoint`.
const PROGRAM: &str = "git-checkpoint";

/// Whether git finds `git-checkpoint` on the PATH of this process (after its
/// exec-path), and, where it finds none, the line that adds the directory of
/// `program` (the running one) to the user's PATH.
pub fn check(program: &Path) -> Finding {
    let exec_path = crate::git::repo::git(Path::new("."), &["--exec-path"])
        .ok()
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out).trim()));
    let found = exec_path
        .map(|dir| dir.join(PROGRAM))
        .filter(|candidate| is_executable(candidate))
        .or_else(|| find_program(PROGRAM));
    let running = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    match found {
        Some(found) if std::fs::canonicalize(&found).ok().as_ref() == Some(&running) => {
            Finding::new(
                Check::Path,
                Status::Ok,
                format!("git finds {PROGRAM} on PATH: {}", found.display()),
            )
        }
        Some(found) => Finding::new(
            Check::Path,
            Status::Note,
            format!(
                "the hooks run {} (first on PATH), not this {PROGRAM} ({})",
                found.display(),
                running.display()
            ),
        ),
        None => missing(&running),
    }
}

/// The problem of a PATH without `git-checkpoint`, fixed by adding the directory of
/// `running` to the PATH of the user's new shells.
fn missing(running: &Path) -> Finding {
    let dir = running.parent().unwrap_or(Path::new("/"));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // `$CARGO_HOME/bin`, or `~/.cargo/bin` where cargo's home is the default.
    let cargo_homes = std::env::var_os("CARGO_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .chain(home.as_ref().map(|home| home.join(".cargo")));
    let canonical = |dir: &Path| std::fs::canonicalize(dir).ok();
    let from_cargo = cargo_homes
        .map(|cargo| cargo.join("bin"))
        .any(|bin| canonical(&bin).is_some() && canonical(&bin) == canonical(dir));
    // Written as the user would write it: `$HOME/.cargo/bin`, not their home's path.
    let shown = match home.as_deref().and_then(|home| dir.strip_prefix(home).ok()) {
        Some(below) => format!("$HOME/{}", below.display()),
        None => dir.display().to_string(),
    };
    let why = match from_cargo {
        true => format!("{shown}, where cargo install put it, is not on PATH"),
        false => format!("{shown} is not on PATH"),
    };
    Finding::new(
        Check::Path,
        Status::Problem,
        format!(
            "git finds no {PROGRAM} on PATH ({why}), so every hook fails with \"git: \
             'checkpoint' is not a git command\" and saves nothing: add it to PATH, then \
             start the agent from a new login shell"
        ),
    )
    .fixed_by(add_to_path(&shown, std::env::var_os("SHELL")))
}

/// The one line that puts `dir` on the PATH of every new shell of the user's `shell`
/// (`$SHELL`): fish's own command, else a line in the file the shell reads at login
/// (zsh reads `~/.zshenv` in every shell; the others, `~/.profile`).
fn add_to_path(dir: &str, shell: Option<OsString>) -> String {
    let shell = shell
        .as_deref()
        .and_then(|shell| Path::new(shell).file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let export = format!("echo 'export PATH=\"{dir}:$PATH\"'");
    match shell.as_str() {
        "fish" => format!("fish_add_path {dir}"),
        "zsh" => format!("{export} >> ~/.zshenv"),
        _ => format!("{export} >> ~/.profile"),
    }
}

/// Where the program `command` is, as an agent starting it finds it: itself when it
/// names a directory (an absolute path), else the first on this process's PATH; `None`
/// where there is no such program.
pub fn find_program(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command)).filter(|path| is_executable(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file someone may run (as git's own lookup asks).
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shell_gets_a_line_it_reads() {
        let bin = "$HOME/.cargo/bin";
        assert_eq!(
            add_to_path(bin, Some("/bin/bash".into())),
            "echo 'export PATH=\"$HOME/.cargo/bin:$PATH\"' >> ~/.profile"
        );
        assert_eq!(
            add_to_path(bin, Some("/usr/bin/zsh".into())),
            "echo 'export PATH=\"$HOME/.cargo/bin:$PATH\"' >> ~/.zshenv"
        );
        assert_eq!(
            add_to_path(bin, Some("/usr/bin/fish".into())),
            "fish_add_path $HOME/.cargo/bin"
        );
        assert!(add_to_path(bin, None).ends_with(">> ~/.profile"));
    }
}
