//! `git checkpoint completions`

use std::io::Write;

/// Print a tab-completion script for a shell.
///
/// The bash script completes both `git-checkpoint` and `git checkpoint`: it defines
/// `_git_checkpoint`, the function git's own bash completion (git-completion.bash)
/// calls for `git checkpoint <TAB>`. The zsh script defines `_git-checkpoint`, which
/// zsh's git completion calls the same way.
///
/// Examples:
///
///   git checkpoint completions bash > ~/.local/share/bash-completion/completions/git-checkpoint
///
///   echo 'source <(git checkpoint completions bash)' >> ~/.bashrc
///
///   git checkpoint completions zsh > ~/.zfunc/_git-checkpoint
///
///   git checkpoint completions fish > ~/.config/fish/completions/git-checkpoint.fish
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete in.
    shell: Shell,
}

/// Shells with a completion script.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// git-completion.bash completes `git <command> …` by calling `_git_<command>` with its
/// own `words`/`cword` (which include `git`, its options and the command). This hands
/// the clap-generated function the line as `git-checkpoint …` would have it, and adds the
/// space after a finished word that git's `-o nospace` completion leaves out.
const GIT_BASH_SHIM: &str = r#"
# Called by git's bash completion (git-completion.bash) for `git checkpoint <TAB>`.
_git_checkpoint() {
    local cmd_idx=${__git_cmd_idx:-1}
    local COMP_WORDS=(git-checkpoint "${words[@]:cmd_idx+1}")
    local COMP_CWORD=$((cword - cmd_idx))
    local COMP_LINE="${COMP_WORDS[*]}"
    local COMP_POINT=${#COMP_LINE}
    _git__checkpoint git-checkpoint "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    local i
    for i in "${!COMPREPLY[@]}"; do
        [[ -d ${COMPREPLY[i]} ]] || COMPREPLY[i]+=" "
    done
}
"#;

/// Runs `completions` for `command`, the whole command line's clap definition.
pub fn run(args: Args, mut command: clap::Command) -> anyhow::Result<()> {
    // Generated into memory first: clap_complete panics when a write fails (a closed pipe).
    let mut script = Vec::new();
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, "git-checkpoint", &mut script);
    if let Shell::Bash = args.shell {
        // clap_complete 4.6 spells the states of a hyphenated binary's subcommands two
        // ways, so their options never complete (clap issue 6421); use the loop's way.
        let fixed = String::from_utf8_lossy(&script)
            .replace("git__subcmd__checkpoint", "git__checkpoint")
            .into_bytes();
        script = fixed;
        script.extend_from_slice(GIT_BASH_SHIM.as_bytes());
    }
    std::io::stdout().write_all(&script)?;
    Ok(())
}
