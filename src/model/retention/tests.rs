//! The retention rules checked against restic's documented examples and each other.

use super::*;
use std::collections::BTreeSet;
use time::macros::datetime;

fn ids(kept: &BTreeMap<CheckpointId, Vec<Reason>>) -> Vec<u128> {
    kept.keys().map(|id| id.0).collect()
}

fn policy(edit: impl FnOnce(&mut Policy)) -> Policy {
    let mut p = Policy::default();
    edit(&mut p);
    p
}

const NOW: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

/// restic's documentation: one backup every Sunday for 12 weeks, then
/// `forget --keep-daily 4` keeps the last four and removes the other eight.
#[test]
fn restic_example_twelve_sundays_keep_daily_4() {
    let first = datetime!(2019-09-01 11:00 UTC);
    let list: Vec<_> = (0..12)
        .map(|week| (CheckpointId(week as u128), first + Duration::weeks(week)))
        .collect();
    assert_eq!(list[11].1, datetime!(2019-11-17 11:00 UTC));
    let kept = select(&policy(|p| p.daily = Some(4)), &list, NOW);
    assert_eq!(ids(&kept), [8, 9, 10, 11]);
    assert!(kept.values().all(|r| r == &[Reason::Daily]));
}

/// restic's documentation: one backup a day for 100 years, `--keep-daily 7
/// --keep-weekly 5 --keep-monthly 12 --keep-yearly 75` keeps the 7 newest dailies, 4
/// more weeklies (the dailies include one), then the month and year ends, each counted
/// once where rules coincide.
#[test]
fn restic_example_hundred_years_of_dailies() {
    // Ending on a Sunday, so that the 7 dailies are exactly one ISO week.
    let last = datetime!(2025-12-28 20:00 UTC);
    assert_eq!(last.weekday(), time::Weekday::Sunday);
    let list: Vec<_> = (0..36525)
        .map(|day| {
            (
                CheckpointId(day as u128),
                last - Duration::days(36524 - day),
            )
        })
        .collect();
    let kept = select(
        &policy(|p| {
            p.daily = Some(7);
            p.weekly = Some(5);
            p.monthly = Some(12);
            p.yearly = Some(75);
        }),
        &list,
        NOW,
    );
    let count = |reason: Reason| kept.values().filter(|r| r.contains(&reason)).count();
    assert_eq!(count(Reason::Daily), 7);
    assert_eq!(count(Reason::Weekly), 5);
    assert_eq!(count(Reason::Monthly), 12);
    assert_eq!(count(Reason::Yearly), 75);
    // The 7 newest are the dailies.
    let newest: Vec<u128> = (36518..36525).collect();
    assert!(newest
        .iter()
        .all(|id| kept[&CheckpointId(*id)].contains(&Reason::Daily)));
    let only = |reason: Reason| kept.values().filter(|r| r[0] == reason).count();
    assert_eq!(only(Reason::Weekly), 4);
    // Exactly: the weeklies are the last 5 Sundays, the monthlies the last day of
    // each of the last 12 months, the yearlies the last day of each of 75 years. (The
    // documentation's "12 or 11 monthly" is loose: here November 30 is a Sunday, so
    // two monthlies coincide with a daily or a weekly.)
    let with = |reason: Reason| -> BTreeSet<OffsetDateTime> {
        kept.iter()
            .filter(|(_, r)| r.contains(&reason))
            .map(|(id, _)| list[id.0 as usize].1)
            .collect()
    };
    let sundays: BTreeSet<_> = (0..5).map(|w| last - Duration::weeks(w)).collect();
    assert_eq!(with(Reason::Weekly), sundays);
    let month_ends: BTreeSet<_> = list
        .windows(2)
        .filter(|w| w[0].1.month() != w[1].1.month())
        .map(|w| w[0].1)
        .chain([last])
        .rev()
        .take(12)
        .collect();
    assert_eq!(with(Reason::Monthly), month_ends);
    let year_ends: BTreeSet<_> = list
        .windows(2)
        .filter(|w| w[0].1.year() != w[1].1.year())
        .map(|w| w[0].1)
        .chain([last])
        .rev()
        .take(75)
        .collect();
    assert_eq!(with(Reason::Yearly), year_ends);
    let mut union = with(Reason::Daily);
    union.extend(sundays);
    union.extend(month_ends);
    union.extend(year_ends);
    assert_eq!(kept.len(), union.len());
    // Nothing is kept as "oldest": every bucket used up its counts.
    assert!(kept
        .values()
        .flatten()
        .all(|r| !matches!(r, Reason::Oldest(_))));
}

/// restic's documentation: `--keep-within 2y5m7d3h` keeps everything made in the two
/// years, five months, seven days and three hours before the newest snapshot.
#[test]
fn restic_example_keep_within_counts_back_from_the_newest() {
    let newest = datetime!(2021-08-20 15:00 UTC);
    let cutoff = datetime!(2019-03-13 12:00 UTC);
    let span: Span = "2y5m7d3h".parse().unwrap();
    assert_eq!(span.before(newest), cutoff);
    let list = vec![
        (CheckpointId(1), newest),
        (CheckpointId(2), cutoff + Duration::minutes(1)),
        (CheckpointId(3), cutoff),
        (CheckpointId(4), cutoff - Duration::days(400)),
    ];
    // Measured from the newest checkpoint, not from now (years later).
    let kept = select(&policy(|p| p.within = Some(span)), &list, NOW);
    assert_eq!(ids(&kept), [1, 2]);
}

#[test]
fn months_normalise_like_go_add_date() {
    let span: Span = "1m".parse().unwrap();
    // 2020-02-31 does not exist: it is March 2 in a leap year.
    assert_eq!(
        span.before(datetime!(2020-03-31 12:00 UTC)),
        datetime!(2020-03-02 12:00 UTC)
    );
    assert_eq!(
        "1w".parse::<Span>()
            .unwrap()
            .before(datetime!(2020-03-08 00:00 UTC)),
        datetime!(2020-03-01 00:00 UTC)
    );
}

/// restic: duration rules ignore snapshots in the future (they neither count as the
/// newest nor are removed by `within`).
#[test]
fn future_checkpoints_do_not_move_the_within_window() {
    let list = vec![
        (CheckpointId(1), NOW + Duration::days(30)),
        (CheckpointId(2), NOW - Duration::days(1)),
        (CheckpointId(3), NOW - Duration::days(3)),
    ];
    let kept = select(
        &policy(|p| p.within = Some("1d2h".parse().unwrap())),
        &list,
        NOW,
    );
    assert_eq!(ids(&kept), [1, 2]);
}

/// restic: with counts left when the oldest snapshot is reached, the oldest is kept
/// too and marked as such.
#[test]
fn the_oldest_is_kept_while_a_bucket_has_counts_left() {
    let list = vec![
        (CheckpointId(1), datetime!(2024-05-02 18:00 UTC)),
        (CheckpointId(2), datetime!(2024-05-02 09:00 UTC)),
        (CheckpointId(3), datetime!(2024-05-01 18:00 UTC)),
        (CheckpointId(4), datetime!(2024-05-01 09:00 UTC)),
    ];
    let kept = select(&policy(|p| p.daily = Some(5)), &list, NOW);
    assert_eq!(ids(&kept), [1, 3, 4]);
    assert_eq!(kept[&CheckpointId(4)], [Reason::Oldest(Bucket::Daily)]);
    // Counts used up before the oldest: no extra.
    let kept = select(&policy(|p| p.daily = Some(2)), &list, NOW);
    assert_eq!(ids(&kept), [1, 3]);
}

/// restic: weeks run Monday 00:00 to Sunday 23:59; only periods with a checkpoint
/// count.
#[test]
fn weeks_are_iso_weeks_and_empty_periods_do_not_count() {
    let list = vec![
        (CheckpointId(1), datetime!(2024-06-10 01:00 UTC)), // Monday
        (CheckpointId(2), datetime!(2024-06-09 23:00 UTC)), // Sunday, previous week
        (CheckpointId(3), datetime!(2024-06-03 08:00 UTC)), // Monday of that week
        (CheckpointId(4), datetime!(2024-04-01 08:00 UTC)), // weeks earlier
        (CheckpointId(5), datetime!(2024-03-31 08:00 UTC)),
    ];
    let kept = select(&policy(|p| p.weekly = Some(3)), &list, NOW);
    assert_eq!(ids(&kept), [1, 2, 4]);
}

#[test]
fn rules_are_a_union_and_hours_are_natural_hours() {
    let list = vec![
        (CheckpointId(1), datetime!(2024-06-10 10:59 UTC)),
        (CheckpointId(2), datetime!(2024-06-10 10:01 UTC)),
        (CheckpointId(3), datetime!(2024-06-10 09:59 UTC)),
        (CheckpointId(4), datetime!(2024-06-10 09:30 UTC)),
        (CheckpointId(5), datetime!(2024-06-09 09:30 UTC)),
    ];
    let kept = select(&policy(|p| p.hourly = Some(2)), &list, NOW);
    assert_eq!(ids(&kept), [1, 3]);
    let kept = select(
        &policy(|p| {
            p.hourly = Some(2);
            p.last = Some(2);
        }),
        &list,
        NOW,
    );
    assert_eq!(ids(&kept), [1, 2, 3]);
    assert_eq!(kept[&CheckpointId(1)], [Reason::Last, Reason::Hourly]);
    // A rule given as 0 keeps nothing by itself.
    assert!(select(&policy(|p| p.last = Some(0)), &list, NOW).is_empty());
}

/// Fetched checkpoints dated in the future (or just before now) neither take the
/// places of `last` and `daily` nor move the `within` window of local ones.
#[test]
fn fetched_times_never_rank_local_checkpoints() {
    let local: Vec<_> = (0..4)
        .map(|day| {
            (
                CheckpointId(day as u128),
                datetime!(2025-12-01 10:00 UTC) + Duration::days(day),
            )
        })
        .collect();
    let fetched = vec![
        (CheckpointId(10), datetime!(2100-01-01 00:00 UTC)),
        (CheckpointId(11), datetime!(2100-01-02 00:00 UTC)),
        (CheckpointId(12), NOW - Duration::minutes(1)),
    ];
    let rules = [
        policy(|p| p.last = Some(2)),
        policy(|p| p.daily = Some(2)),
        policy(|p| p.within = Some("2d".parse().unwrap())),
    ];
    for rule in rules {
        let kept = select_apart(&rule, &local, &fetched, NOW);
        let alone = select(&rule, &local, NOW);
        let local_kept: BTreeMap<_, _> = kept.into_iter().filter(|(id, _)| id.0 < 10).collect();
        assert_eq!(local_kept, alone, "{rule:?}");
        assert!(alone.contains_key(&CheckpointId(3)), "{rule:?}");
    }
}

// `local_time` is tested through the binary, in tests/it/cmd_gc_time_zone.rs: it needs `TZ` set,
// and setting it here would race with the other tests' threads in this process.

/// The offset `tz` gives at a UTC time, in hours.
fn hours(tz: &TimeZone, utc: OffsetDateTime) -> f64 {
    let instant = jiff::Timestamp::from_second(utc.unix_timestamp()).unwrap();
    f64::from(tz.to_offset(instant).seconds()) / 3600.0
}

#[test]
fn posix_zones_jiff_declines_are_read_as_the_c_library_reads_them() {
    let tokyo = posix_zone_as_c_reads_it(":JST-9").unwrap();
    assert_eq!(hours(&tokyo, datetime!(2024-07-01 00:00 UTC)), 9.0);
    // A summer time without its rule follows the US one: from the second Sunday of
    // March to the first Sunday of November, at 02:00 local time.
    let us = posix_zone_as_c_reads_it("FOO5BAR").unwrap();
    assert_eq!(hours(&us, datetime!(2024-03-10 06:59:59 UTC)), -5.0);
    assert_eq!(hours(&us, datetime!(2024-03-10 07:00 UTC)), -4.0);
    assert_eq!(hours(&us, datetime!(2024-11-03 05:59:59 UTC)), -4.0);
    assert_eq!(hours(&us, datetime!(2024-11-03 06:00 UTC)), -5.0);
    let half = posix_zone_as_c_reads_it("<+0330>-3:30").unwrap();
    assert_eq!(hours(&half, datetime!(2024-01-01 00:00 UTC)), 3.5);
    for unreadable in ["garbage", ":garbage", "Foo/Bar", ""] {
        assert!(
            posix_zone_as_c_reads_it(unreadable).is_none(),
            "{unreadable:?}"
        );
    }
}

#[test]
fn durations_parse_or_say_why_not() {
    assert_eq!(
        "2y5m7d3h".parse::<Span>().unwrap(),
        Span {
            years: 2,
            months: 5,
            days: 7,
            hours: 3
        }
    );
    assert_eq!("1w2d".parse::<Span>().unwrap().days, 9);
    assert_eq!("12h".parse::<Span>().unwrap().to_string(), "12h");
    for bad in ["", "2", "d", "2x", "h2", "-1d", "99999999999y"] {
        let err = bad.parse::<Span>().unwrap_err().to_string();
        assert!(err.contains("not a duration"), "{bad}: {err}");
    }
}
