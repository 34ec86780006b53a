//! `git checkpoint install-man`

use std::path::PathBuf;

use anyhow::Context as _;

/// Install the manual pages, so that `git checkpoint --help` shows them.
///
/// git answers `git checkpoint --help` by running `man git-checkpoint`, and man finds
/// the pages of a program in <prefix>/share/man when <prefix>/bin is on PATH. So by
/// default the pages go to <prefix>/share/man/man1 beside the running binary's
/// <prefix>/bin (for `cargo install`: ~/.cargo/share/man/man1). The pages are built
/// into the binary, so they always match it; run this again after an upgrade.
///
/// Examples:
///
///   cargo install --path . && git checkpoint install-man
///
///   git checkpoint install-man --prefix ~/.local
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Install into <dir>/share/man/man1 instead of beside the binary.
    #[arg(long, value_name = "dir")]
    prefix: Option<PathBuf>,
}

/// Runs `install-man` for `command`, the whole command line's clap definition.
pub fn run(args: Args, command: clap::Command, quiet: bool) -> anyhow::Result<()> {
    let prefix = match args.prefix {
        Some(prefix) => prefix,
        None => {
            let exe = std::env::current_exe().context("cannot find the running binary")?;
            exe.parent()
                .and_then(|bin| bin.parent())
                .map(PathBuf::from)
                .with_context(|| format!("{} has no parent directory", exe.display()))?
        }
    };
    let dir = prefix.join("share/man/man1");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(command, &dir)
        .with_context(|| format!("cannot write the manual pages to {}", dir.display()))?;
    if !quiet {
        println!("Installed the manual pages in {}", dir.display());
    }
    Ok(())
}
