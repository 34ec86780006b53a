//! The watcher's contract where events arrive late, as FSEvents delivers them on macOS.
//! The test builds' delayed event source (`GIT_CHECKPOINT_WATCH_DELAYED`, see
//! src/watch/platform/delayed.rs) hands inotify's events to the watcher in batches, a
//! latency after the change, coalesced per path, and with a rescan rate drops now and
//! then a batch for "events were lost". A save right after a change still records it (the
//! watcher waits for its cookie's event before it answers), lost events make the save
//! walk, and no cookie is ever captured. .ci/run also runs every watcher module again
//! with the variable set.
//!
//! On macOS the variable does nothing (the delayed source is Linux's): there these tests
//! check the real FSEvents stream, but for the one that needs batches to be lost.

use crate::cmd_watch::{assert_walk_agrees, traced_save, Watcher};
use crate::common::Repo;

/// The variable that selects the delayed event source.
const DELAYED: &str = "GIT_CHECKPOINT_WATCH_DELAYED";

/// How the cookies' names begin (`worktree::exempt::WATCH_COOKIE_PREFIX`).
const COOKIE_PREFIX: &str = ".git-checkpoint-cookie-";

/// A saved repository with a watcher whose events come `delay` late (`<min>-<max>[:<n>]`
/// in milliseconds), primed: its first save walked and recorded the token.
fn late_watched_repo<'r>(repo: &'r Repo, delay: &str) -> Watcher<'r> {
    repo.write("a/one.txt", b"one\n");
    repo.write("b/two.txt", b"two\n");
    repo.save("start");
    let watcher = Watcher::start_with(repo, &[], &[(DELAYED, delay)]);
    repo.write("primer.txt", b"primer\n");
    assert!(traced_save(repo, "primer").saved());
    watcher
}

/// The paths the last checkpoint changed, sorted.
fn last_changes(repo: &Repo) -> Vec<String> {
    let mut paths: Vec<String> = repo
        .ok(&["diff", "--name-only", "@~1", "@"])
        .stdout
        .lines()
        .map(str::to_string)
        .collect();
    paths.sort();
    paths
}

/// Changes two files (one new) in round `round` and saves at once: the save must record
/// exactly those two, whether it asked the watcher or walked.
#[track_caller]
fn change_and_save(repo: &Repo, round: usize) -> crate::cmd_watch::Traced {
    let new = format!("a/round{round}.txt");
    repo.write(&new, format!("round {round}\n").as_bytes());
    repo.write("b/two.txt", format!("two, round {round}\n").as_bytes());
    let save = traced_save(repo, &format!("round {round}"));
    assert!(
        save.saved(),
        "round {round}: the save missed changes whose events were still on their way\n{}",
        save.out
    );
    assert_eq!(
        last_changes(repo),
        [new, "b/two.txt".to_string()],
        "round {round}"
    );
    save
}

fn cookies_in(repo: &Repo) -> Vec<String> {
    std::fs::read_dir(&repo.dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(COOKIE_PREFIX))
        .collect()
}

#[test]
fn a_save_right_after_a_change_records_it_though_its_event_is_late() {
    let repo = Repo::new();
    let watcher = late_watched_repo(&repo, "150-300");
    for round in 0..4 {
        let save = change_and_save(&repo, round);
        assert!(
            save.ran("watch") && !save.ran("walk"),
            "the save walked instead of asking the watcher\n{}",
            save.out
        );
    }
    // Nothing changed since: the cookies are no change (the watcher names no path), and
    // none is left.
    let again = traced_save(&repo, "nothing");
    assert!(
        again.out.stdout.contains("Nothing changed")
            && again.ran("watch: ask")
            && !again.ran("watch")
            && !again.ran("walk"),
        "{}",
        again.out
    );
    assert_eq!(cookies_in(&repo), Vec::<String>::new());
    assert_walk_agrees(&repo, watcher);
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "only the delayed event source of Linux's test builds loses batches at will"
)]
fn lost_events_make_every_save_walk_and_record_what_a_walk_does() {
    let repo = Repo::new();
    // Every batch is dropped for "rescan": the watcher can vouch for nothing.
    let watcher = late_watched_repo(&repo, "20-60:1");
    for round in 0..3 {
        let save = change_and_save(&repo, round);
        assert!(
            save.ran("walk") && !save.ran("watch"),
            "lost events must make the save walk\n{}",
            save.out
        );
    }
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn every_save_is_exact_when_batches_are_now_and_then_lost() {
    let repo = Repo::new();
    let watcher = late_watched_repo(&repo, "50-150:3");
    for round in 0..8 {
        change_and_save(&repo, round);
    }
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn a_cookie_is_never_captured_and_a_dead_watchers_cookies_are_removed() {
    let repo = Repo::new();
    repo.write("f.txt", b"f\n");
    repo.save("start");
    // What a watcher killed while it waited for its cookie leaves behind.
    let left = format!("{COOKIE_PREFIX}4242-7");
    repo.write(&left, b"");
    repo.write("g.txt", b"g\n");
    repo.save("with a cookie in the top");
    assert_eq!(last_changes(&repo), ["g.txt"]);
    let status = repo.ok(&["status"]);
    assert!(!status.stdout.contains(COOKIE_PREFIX), "{status}");
    // Below the top, such a name is the user's file like any other.
    repo.write(format!("sub/{left}"), b"mine\n");
    repo.save("below the top");
    assert_eq!(last_changes(&repo), [format!("sub/{left}")]);
    let watcher = Watcher::start_with(&repo, &[], &[(DELAYED, "20-60")]);
    assert_eq!(cookies_in(&repo), Vec::<String>::new());
    drop(watcher);
}
