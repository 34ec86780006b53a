//! `git checkpoint watch`

use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use git_checkpoint::error::ErrorKind;
use git_checkpoint::ops::save::{save_then_gc, SaveOptions, SaveOutcome};
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::settings::DEFAULT_COMPRESSION;
use git_checkpoint::watch::{self, client, daemon};

use super::save::parse_meta;
use super::Context;
use crate::ui::failure::Failure;

/// Watch the worktree so that a save need not walk it.
///
/// Runs a watcher for this worktree (inotify on Linux, FSEvents on macOS): it keeps a
/// journal of the paths that change, and a save asks it which paths changed since the
/// last save instead of looking at every file. Without a watcher, or when it cannot vouch for the journal
/// (lost events, a changed ignore file, the index changed), a save walks as always,
/// so a watcher only ever makes a save faster, never different.
///
/// The watcher runs in the foreground until interrupted, or with --daemon in the
/// background (its pid in <git-dir>/checkpoint/watch/pid), until `watch --stop`, or
/// until the worktree is removed. One watcher runs per worktree.
///
/// An agent's hook run (`hooks run`) starts one in the background when none runs,
/// unless `checkpoint.autoWatch` is false; that one also exits once nothing happened in
/// the worktree for `checkpoint.watchIdleExit` (default 30m; changes to ignored files do
/// not count). Those watchers together take at most a quarter of your inotify instances
/// and watches (on macOS, of 128 FSEvents streams): past that, the one idle longest (a
/// minute or more) makes room, or no watcher starts and saves walk. A watcher you start
/// runs until stopped, unless you set that key (0: never), and is not counted.
///
/// Examples:
///
///   git checkpoint watch --daemon
///
///   git checkpoint watch --daemon --save-after 30s --meta source=watch
///
///   git checkpoint watch --stop
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run in the background and return once the watcher answers.
    #[arg(long, conflicts_with = "stop")]
    daemon: bool,
    /// Stop the watcher of this worktree.
    #[arg(long)]
    stop: bool,
    /// Also save once no change came for this long (e.g. 500ms, 30s, 5m).
    #[arg(long, value_name = "duration", value_parser = parse_duration, conflicts_with = "stop")]
    save_after: Option<Duration>,
    /// Metadata for the checkpoints --save-after makes, as key=value (repeatable).
    #[arg(long = "meta", value_name = "key=value", value_parser = parse_meta, requires = "save_after")]
    meta: Vec<(String, String)>,
    /// The message of the checkpoints --save-after makes.
    #[arg(short, long, default_value = "saved by watch", requires = "save_after")]
    message: String,
    /// Started by a hook run: exits when idle, by default after 30 minutes.
    #[arg(long, hide = true, conflicts_with_all = ["stop", "daemon"])]
    auto: bool,
    /// The registry entry the hook run that started this watcher made for it (its lock
    /// inherited): the watcher holds no more than the share of inotify it reserves there.
    #[arg(long, hide = true, requires = "auto", value_name = "id")]
    entry: Option<String>,
}

/// Reads `500ms`, `30s`, `5m`, `2h`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (like 500ms, 30s, 5m)"))?;
    let millis = match unit {
        "ms" => Some(number),
        "" | "s" => number.checked_mul(1000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        _ => None,
    };
    match millis {
        Some(millis) if millis > 0 => Ok(Duration::from_millis(millis)),
        _ => Err(format!("'{text}' is not a duration (like 500ms, 30s, 5m)")),
    }
}

/// Runs `watch`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let repo = &context.workspace.repo;
    if args.stop {
        match client::stop(repo)? {
            Some(pid) => context.say(&format!("Stopped the watcher (pid {pid})")),
            None => context.say("No watcher was running"),
        }
        return Ok(());
    }
    // Before a daemon is started: its failure would come back wrapped in the log.
    watch::platform::available()?;
    if args.daemon {
        return start_daemon(context);
    }
    let quiet = args.save_after.map(|after| {
        let workspace = context.workspace.clone();
        let mut settings = workspace.settings.clone();
        // A bad `checkpoint.compression` does not stop the saves after quiet time: they
        // compress at the default level instead.
        if settings.compression.get().is_err() {
            settings.compression = Ok(DEFAULT_COMPRESSION).into();
        }
        let options = SaveOptions {
            meta: args.meta.clone(),
            // A file this user cannot read is left out (recorded, and warned of in the
            // log) rather than stopping every save after quiet time.
            skip_unreadable: true,
            ..SaveOptions::new(args.message.clone(), settings)
        };
        daemon::Quiet {
            after,
            save: Arc::new(move || quiet_save(&workspace, &options)),
        }
    });
    let idle_exit = context.workspace.settings.watch_idle_exit(args.auto)?;
    let registration = args
        .entry
        .map(|id| watch::share::Registration::adopt(&id, &watch::dir(repo)))
        .transpose()?;
    let exit = daemon::run(repo, quiet, idle_exit, registration, || {
        context.say(&format!(
            "Watching {} (pid {})",
            repo.root.display(),
            std::process::id()
        ));
    })?;
    match exit {
        daemon::Exit::WorktreeGone => context.say("The worktree is gone; the watcher stops"),
        daemon::Exit::Idle => context.say("Nothing happened for a while; the watcher stops"),
        daemon::Exit::MadeRoom => context.say(
            "Made room for another worktree's watcher: the watchers hook runs start hold their \
             share of your file-watching limits, and this one was idle longest; the watcher stops",
        ),
        daemon::Exit::OverShare { watches } => context.say(&format!(
            "This worktree has {watches} directories or more, more than your file-watching limits \
             leave to the watchers hook runs start; the watcher stops, and saves walk"
        )),
        daemon::Exit::Stopped => {}
    }
    Ok(())
}

/// One `--save-after` save, through the library like `save`; what it says goes to the
/// watcher's stderr (its log file, for a daemon).
fn quiet_save(workspace: &Workspace, options: &SaveOptions) {
    let result = workspace
        .open_store(&mut || {})
        .and_then(|mut store| save_then_gc(&workspace.repo, &mut store, options));
    match result {
        Ok(report) => {
            for warning in &report.warnings {
                eprintln!("warning: {warning}");
            }
            if let SaveOutcome::Saved { id, .. } = report.outcome {
                eprintln!("saved checkpoint {}", id.hex());
            }
        }
        Err(e) => eprintln!("error: the save after quiet time failed: {e}"),
    }
}

/// Starts this same command in the foreground as a child in its own process group,
/// detached from the terminal, and returns once it answers.
fn start_daemon(context: &Context) -> anyhow::Result<()> {
    let repo = &context.workspace.repo;
    if let Some(pid) = client::running(repo) {
        return Err(Failure::input(format!(
            "a watcher is already running on this worktree (pid {pid})"
        )));
    }
    let log = watch::create_log(repo)?;
    let args: Vec<OsString> = std::env::args_os()
        .skip(1)
        .filter(|arg| arg != "--daemon")
        .collect();
    let mut child = watch::start::spawn(repo, &std::env::current_exe()?, &args, log)
        .context("starting the watcher")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = client::running(repo) {
            context.say(&format!(
                "Watching {} in the background (pid {pid})",
                repo.root.display()
            ));
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = watch::read_log(repo, 64 << 10);
            return Err(Failure::error(
                ErrorKind::Io,
                format!("the watcher stopped ({status}): {}", log.trim()),
            ));
        }
        if Instant::now() > deadline {
            return Err(Failure::error(
                ErrorKind::Io,
                "the watcher did not answer within 30 seconds",
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_read_with_their_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        for bad in ["", "s", "0", "1x", "-1s", "1.5s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
