//! `git checkpoint completions`

use std::io::Write;

/// Print a tab-completion script for a shell.
///
/// The script asks git-checkpoint itself for candidates as you type, so it completes
/// what is in the store: revisions (`@`, branches, fetched `<remote>/<branch>`es, the
/// newest checkpoints' ids, `<session>:prompt<N>`), branches after `switch`, session
/// ids after `--session` and attachment names after `attachment <rev>`. Free text (a
/// message after -m) completes nothing. Completing only reads the store, and offers
/// nothing rather than wait while another git-checkpoint writes it.
///
/// The bash script completes both `git-checkpoint` and `git checkpoint`: it defines
/// `_git_checkpoint`, the function git's own bash completion (git-completion.bash)
/// calls for `git checkpoint <TAB>`. The zsh script defines `_git-checkpoint`, which
/// zsh's git completion calls the same way; the fish script completes both too.
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

/// The bash script. Bash splits the word being completed at `:` and `=` (its
/// COMP_WORDBREAKS), so `abc:prompt2` reaches a completion function as three words; the
/// binary is given the words as typed (rejoined where no space separated them), and each
/// candidate loses the part of the word readline will not replace (up to its last `:` or
/// `=`) and is quoted with `printf %q`, as bash inserts it verbatim. An empty answer turns
/// off the file-name fallback git's completion registers (`-o default`), so a message
/// after -m never completes to file names.
const BASH: &str = r#"# git-checkpoint completion for bash: `git-checkpoint <TAB>` and `git checkpoint <TAB>`.
# Candidates come from git-checkpoint itself (GIT_CHECKPOINT_COMPLETE=bash).

# Sets COMPREPLY for the word at index $1 of the words after $2 (the whole word being
# completed, as git's completion or _git_checkpoint_bash rejoined it).
__git_checkpoint_complete() {
    local index=$1 cur=$2
    shift 2
    local -a reply=()
    mapfile -t reply < <(_CLAP_IFS=$'\n' _CLAP_COMPLETE_INDEX="$index" \
        GIT_CHECKPOINT_COMPLETE=bash git-checkpoint -- "$@" 2>/dev/null)
    # Readline replaces only the part of the word after its last `:` or `=` (when
    # COMP_WORDBREAKS holds them), whatever COMP_WORDS says: after `abc:` it is the empty
    # text after the colon, not the `:` word (git's __ltrim_colon_completions).
    local breaks= keep=
    [[ $COMP_WORDBREAKS == *:* ]] && breaks+=:
    [[ $COMP_WORDBREAKS == *=* ]] && breaks+==
    [[ -n $breaks && $cur == *[$breaks]* ]] && keep=${cur%"${cur##*[$breaks]}"}
    COMPREPLY=()
    local candidate end
    for candidate in "${reply[@]}"; do
        [[ -n $candidate ]] || continue
        # Options only once a `-` is typed, as git's own completion offers them.
        [[ $candidate == -* && $cur != -* ]] && continue
        # A finished word gets its space; `<session>:`, `dir/` and `--opt=` go on.
        end=" "
        [[ $candidate == *[:/=] ]] && end=
        candidate=${candidate#"$keep"}
        # Quoted for the shell: a name from the store (a fetched branch) is inserted as
        # one word and never run, whatever characters it holds.
        [[ -n $candidate ]] && printf -v candidate %q "$candidate"
        COMPREPLY+=("$candidate$end")
    done
    if ((${#COMPREPLY[@]} == 0)); then
        compopt +o default +o bashdefault 2>/dev/null
    fi
    return 0
}

# `complete -F` function for `git-checkpoint`.
_git_checkpoint_bash() {
    local -a words=()
    local line=${COMP_LINE:0:COMP_POINT} lead word i
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        lead=${line%%[![:space:]]*}
        line=${line:${#lead}}
        if ((i > 0)) && [[ -z $lead ]]; then
            words[${#words[@]}-1]+=$word
        else
            words+=("$word")
        fi
        line=${line:${#word}}
    done
    __git_checkpoint_complete $((${#words[@]} - 1)) "${words[${#words[@]}-1]}" "${words[@]}"
}
complete -o nospace -F _git_checkpoint_bash git-checkpoint

# Called by git's bash completion (git-completion.bash) for `git checkpoint <TAB>`, with
# its own words, cword and cur (rejoined at `:` and `=`), __git_cmd_idx and __git_C_args.
_git_checkpoint() {
    local cmd_idx=${__git_cmd_idx:-1}
    local -a args=(git-checkpoint ${__git_C_args:+"${__git_C_args[@]}"}
        "${words[@]:cmd_idx+1:cword-cmd_idx}")
    __git_checkpoint_complete $((${#args[@]} - 1)) "$cur" "${args[@]}"
}
"#;

/// The zsh script: `_git-checkpoint` completes `git-checkpoint` and, called by zsh's git
/// completion with `checkpoint` as its first word, `git checkpoint`. Loaded from `fpath`
/// (compinit autoloads it by its `#compdef` line) or sourced.
const ZSH: &str = r#"#compdef git-checkpoint
# git-checkpoint completion for zsh. Candidates come from git-checkpoint itself
# (GIT_CHECKPOINT_COMPLETE=zsh), with a description beside each.

_git-checkpoint() {
    local -a line_words
    line_words=(git-checkpoint "${(@)words[2,-1]}")
    local -a completions
    completions=("${(@f)$(_CLAP_IFS=$'\n' _CLAP_COMPLETE_INDEX=$((CURRENT - 1)) \
        GIT_CHECKPOINT_COMPLETE=zsh git-checkpoint -- "${(@)line_words}" 2>/dev/null)}")
    completions=(${completions:#})
    # Options only once a `-` is typed, as git's own completion offers them.
    [[ ${words[CURRENT]} == -* ]] || completions=(${completions:#-*})
    (( ${#completions} )) && _describe -V values completions && return 0
    return 1
}

if [[ "$funcstack[1]" == "_git-checkpoint" ]]; then
    _git-checkpoint "$@"
else
    compdef _git-checkpoint git-checkpoint
fi
"#;

/// The fish script: one completion for `git-checkpoint`, one for `git checkpoint`
/// (the words after `git checkpoint` handed over as `git-checkpoint`'s).
const FISH: &str = r#"# git-checkpoint completion for fish. Candidates come from git-checkpoint itself
# (GIT_CHECKPOINT_COMPLETE=fish), with a description beside each.
complete --keep-order --exclusive --command git-checkpoint --arguments "(GIT_CHECKPOINT_COMPLETE=fish git-checkpoint -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
complete --keep-order --exclusive --command git --condition "__fish_seen_subcommand_from checkpoint" --arguments "(GIT_CHECKPOINT_COMPLETE=fish git-checkpoint -- git-checkpoint (commandline --current-process --tokenize --cut-at-cursor)[3..-1] (commandline --current-token))"
"#;

/// Runs `completions`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let script = match args.shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    std::io::stdout().write_all(script.as_bytes())?;
    Ok(())
}
