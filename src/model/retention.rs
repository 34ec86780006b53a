//! Which checkpoints a retention policy keeps. The rules are restic's `forget` rules, so
//! that a policy means the same thing in both tools:
//!
//! - `last N`: the N newest checkpoints.
//! - `hourly`/`daily`/`weekly`/`monthly`/`yearly N`: for the last N hours (days, ISO
//!   weeks Monday to Sunday, months, years) *that have a checkpoint*, the newest
//!   checkpoint of each. Periods are natural calendar periods in local time, not counted
//!   back from now. While a bucket still has counts left when the oldest checkpoint is
//!   reached, that oldest one is kept as well ("oldest daily"), which keeps the longest
//!   history the counts allow.
//! - `within D`: every checkpoint made less than D before the newest checkpoint that is
//!   not in the future (restic measures from the newest snapshot rather than from now, so
//!   a store left alone for a month does not lose everything at the next run).
//!
//! - `prompts N`, `sessions N`: whole prompts and whole sessions of agents, in the units
//!   users think in ([`Turns`], which also keeps every kept prompt's turn addressable).
//!
//! The result is the union: a checkpoint matched by any rule is kept. [`select`] is a
//! pure function of `(id, time)` pairs so that it can be checked against restic's
//! documented examples.
//!
//! Checkpoints fetched from a remote carry the remote's times, which nothing here can
//! check: a hostile remote (or a teammate's skewed clock) dates them in 2100 and they
//! would be "the newest" for every rule. [`select_apart`] therefore ranks local and
//! fetched checkpoints separately, so that fetched ones never take a place local ones
//! would have had and never move the `within` window of local history.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use jiff::tz::TimeZone;
use time::{Date, Duration, Month, OffsetDateTime, UtcOffset};

use crate::{CheckpointId, Error, Result};

mod turns;
pub use turns::{GcRemoval, Turns};

/// A calendar duration as restic writes it: `2y5m7d3h` is two years, five months, seven
/// days and three hours. `w` (weeks, 7 days) is accepted too. `m` means months, as in
/// restic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Calendar years.
    pub years: i32,
    /// Calendar months.
    pub months: i32,
    /// Days (weeks are stored as 7 days each).
    pub days: i64,
    /// Hours.
    pub hours: i64,
}

impl std::str::FromStr for Span {
    type Err = Error;

    fn from_str(text: &str) -> Result<Span> {
        let bad = || {
            Error::InvalidArgument(format!(
                "'{text}' is not a duration: use numbers with y, m (months), w, d or h, e.g. 2d, 12h, 1w, 1y6m"
            ))
        };
        let mut span = Span::default();
        let mut digits = String::new();
        for c in text.trim().chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            let n: i64 = digits.parse().map_err(|_| bad())?;
            digits.clear();
            let small = || i32::try_from(n).map_err(|_| bad());
            match c {
                'y' => span.years = span.years.checked_add(small()?).ok_or_else(bad)?,
                'm' => span.months = span.months.checked_add(small()?).ok_or_else(bad)?,
                'w' => {
                    span.days = n
                        .checked_mul(7)
                        .and_then(|d| span.days.checked_add(d))
                        .ok_or_else(bad)?
                }
                'd' => span.days = span.days.checked_add(n).ok_or_else(bad)?,
                'h' => span.hours = span.hours.checked_add(n).ok_or_else(bad)?,
                _ => return Err(bad()),
            }
        }
        if !digits.is_empty() || span == Span::default() && !text.trim().starts_with('0') {
            return Err(bad());
        }
        Ok(span)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            (i64::from(self.years), 'y'),
            (i64::from(self.months), 'm'),
            (self.days, 'd'),
            (self.hours, 'h'),
        ];
        let mut any = false;
        for (n, unit) in parts.into_iter().filter(|(n, _)| *n != 0) {
            write!(f, "{n}{unit}")?;
            any = true;
        }
        if !any {
            write!(f, "0h")?;
        }
        Ok(())
    }
}

impl Span {
    /// The instant this span before `t`. Years, months and days are calendar steps with
    /// the normalisation restic inherits from Go's `AddDate` (March 31 minus one month is
    /// "February 31", which is March 2 or 3); hours are exact. Far out of range gives the
    /// earliest representable time, so everything counts as within.
    pub fn before(&self, t: OffsetDateTime) -> OffsetDateTime {
        let earliest = OffsetDateTime::new_in_offset(Date::MIN, time::Time::MIDNIGHT, t.offset());
        let months_back = i64::from(self.years) * 12 + i64::from(self.months);
        let total = i64::from(t.year()) * 12 + i64::from(u8::from(t.month())) - 1 - months_back;
        let shifted = i32::try_from(total.div_euclid(12))
            .ok()
            .and_then(|year| {
                let month = Month::try_from(total.rem_euclid(12) as u8 + 1).ok()?;
                Date::from_calendar_date(year, month, 1).ok()
            })
            .and_then(|first| first.checked_add(Duration::days(i64::from(t.day()) - 1)))
            .and_then(|date| date.checked_sub(Duration::days(self.days)))
            .map(|date| OffsetDateTime::new_in_offset(date, t.time(), t.offset()))
            .and_then(|moment| moment.checked_sub(Duration::hours(self.hours)));
        shifted.unwrap_or(earliest)
    }
}

/// How many checkpoints of each kind to keep. `None` means the rule is not used; a rule
/// given with 0 keeps nothing by itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Keep the N newest.
    pub last: Option<usize>,
    /// Keep the newest of each of the last N hours that have a checkpoint.
    pub hourly: Option<usize>,
    /// … of the last N days.
    pub daily: Option<usize>,
    /// … of the last N ISO weeks.
    pub weekly: Option<usize>,
    /// … of the last N months.
    pub monthly: Option<usize>,
    /// … of the last N years.
    pub yearly: Option<usize>,
    /// Keep everything made less than this before the newest checkpoint.
    pub within: Option<Span>,
    /// Keep the N newest prompts of agent sessions, each turn whole ([`Turns`]).
    pub prompts: Option<usize>,
    /// Keep every checkpoint of the N agent sessions last active ([`Turns`]).
    pub sessions: Option<usize>,
}

impl Policy {
    /// Whether no rule is set (then gc removes no checkpoint).
    pub fn is_empty(&self) -> bool {
        *self == Policy::default()
    }

    /// The rules in restic's words, for messages: "keep 10 newest, 7 daily".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (count, what) in [
            (self.last, "newest"),
            (self.hourly, "hourly"),
            (self.daily, "daily"),
            (self.weekly, "weekly"),
            (self.monthly, "monthly"),
            (self.yearly, "yearly"),
        ] {
            if let Some(n) = count {
                parts.push(format!("{n} {what}"));
            }
        }
        if let Some(span) = self.within {
            parts.push(format!("all within {span} of the newest"));
        }
        for (count, what) in [(self.prompts, "prompt"), (self.sessions, "session")] {
            match count {
                Some(1) => parts.push(format!("1 {what}")),
                Some(n) => parts.push(format!("{n} {what}s")),
                None => {}
            }
        }
        format!("keep {}", parts.join(", "))
    }
}

/// What a gc keeps beyond tips, the current checkpoint and pins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcOptions {
    /// The retention rules; empty keeps every checkpoint.
    pub policy: Policy,
    /// After the rules, drop the oldest unprotected checkpoints until the live data
    /// (stored bytes of everything kept) is at most this.
    pub max_size: Option<u64>,
}

/// The rule that keeps a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// One of the newest N.
    Last,
    /// The newest of its hour.
    Hourly,
    /// The newest of its day.
    Daily,
    /// The newest of its ISO week.
    Weekly,
    /// The newest of its month.
    Monthly,
    /// The newest of its year.
    Yearly,
    /// The oldest checkpoint, kept because this bucket rule had counts left.
    Oldest(Bucket),
    /// Made within the `within` span of the newest.
    Within,
    /// A checkpoint of one of the newest prompts' turns (`prompts`).
    Prompt,
    /// A checkpoint of one of the sessions last active (`sessions`).
    Session,
    /// The last checkpoint of a kept prompt's turn, which keeps the turn addressable.
    TurnEnd,
}

/// The counted rules, in restic's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bucket {
    /// `last`.
    Last,
    /// `hourly`.
    Hourly,
    /// `daily`.
    Daily,
    /// `weekly`.
    Weekly,
    /// `monthly`.
    Monthly,
    /// `yearly`.
    Yearly,
}

impl Bucket {
    fn reason(self) -> Reason {
        match self {
            Bucket::Last => Reason::Last,
            Bucket::Hourly => Reason::Hourly,
            Bucket::Daily => Reason::Daily,
            Bucket::Weekly => Reason::Weekly,
            Bucket::Monthly => Reason::Monthly,
            Bucket::Yearly => Reason::Yearly,
        }
    }

    /// The period `t` falls in; equal keys mean the same hour, day, week….
    fn key(self, t: OffsetDateTime, position: usize) -> i64 {
        let (year, month, day, hour) = (
            i64::from(t.year()),
            i64::from(u8::from(t.month())),
            i64::from(t.day()),
            i64::from(t.hour()),
        );
        match self {
            // Every checkpoint is a period of its own.
            Bucket::Last => position as i64,
            Bucket::Hourly => ((year * 100 + month) * 100 + day) * 100 + hour,
            Bucket::Daily => (year * 100 + month) * 100 + day,
            Bucket::Weekly => {
                let (iso_year, week, _) = t.to_iso_week_date();
                i64::from(iso_year) * 100 + i64::from(week)
            }
            Bucket::Monthly => year * 100 + month,
            Bucket::Yearly => year,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Last => write!(f, "newest"),
            Reason::Hourly => write!(f, "hourly"),
            Reason::Daily => write!(f, "daily"),
            Reason::Weekly => write!(f, "weekly"),
            Reason::Monthly => write!(f, "monthly"),
            Reason::Yearly => write!(f, "yearly"),
            Reason::Oldest(bucket) => write!(f, "oldest {}", bucket.reason()),
            Reason::Within => write!(f, "within"),
            Reason::Prompt => write!(f, "prompt"),
            Reason::Session => write!(f, "session"),
            Reason::TurnEnd => write!(f, "end of a kept prompt's turn"),
        }
    }
}

/// The checkpoints `policy` keeps out of `list`, each with the rules that keep it.
/// `now` only decides which checkpoints are in the future: those never count as the
/// newest for `within`. An empty policy keeps nothing (the caller decides what that
/// means).
pub fn select(
    policy: &Policy,
    list: &[(CheckpointId, OffsetDateTime)],
    now: OffsetDateTime,
) -> BTreeMap<CheckpointId, Vec<Reason>> {
    let mut sorted: Vec<(CheckpointId, OffsetDateTime)> = list.to_vec();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut buckets: Vec<(Bucket, usize, Option<i64>)> = [
        (Bucket::Last, policy.last),
        (Bucket::Hourly, policy.hourly),
        (Bucket::Daily, policy.daily),
        (Bucket::Weekly, policy.weekly),
        (Bucket::Monthly, policy.monthly),
        (Bucket::Yearly, policy.yearly),
    ]
    .into_iter()
    .filter_map(|(bucket, count)| count.filter(|&n| n > 0).map(|n| (bucket, n, None)))
    .collect();
    let newest_past = sorted.iter().map(|(_, t)| *t).find(|t| *t < now);
    let cutoff = policy
        .within
        .map(|span| newest_past.map(|t| span.before(t)));

    let mut kept = BTreeMap::new();
    let oldest = sorted.len().saturating_sub(1);
    for (position, (id, t)) in sorted.iter().enumerate() {
        let mut reasons = Vec::new();
        match cutoff {
            // Nothing in the past: restic's newest is then the zero time, so all is within.
            Some(None) => reasons.push(Reason::Within),
            Some(Some(cutoff)) if *t > cutoff => reasons.push(Reason::Within),
            _ => {}
        }
        for (bucket, left, last_key) in buckets.iter_mut().filter(|b| b.1 > 0) {
            let key = bucket.key(*t, position);
            if Some(key) != *last_key {
                reasons.push(bucket.reason());
            } else if position == oldest {
                reasons.push(Reason::Oldest(*bucket));
            } else {
                continue;
            }
            *last_key = Some(key);
            *left -= 1;
        }
        if !reasons.is_empty() {
            kept.insert(*id, reasons);
        }
    }
    kept
}

/// [`select`] applied to `local` (saved in this store) and to `fetched` (imported from a
/// remote) each on its own, and the union of both: a fetched checkpoint's time, whatever
/// it says, decides nothing about which local checkpoints stay.
pub fn select_apart(
    policy: &Policy,
    local: &[(CheckpointId, OffsetDateTime)],
    fetched: &[(CheckpointId, OffsetDateTime)],
    now: OffsetDateTime,
) -> BTreeMap<CheckpointId, Vec<Reason>> {
    let mut kept = select(policy, local, now);
    kept.extend(select(policy, fetched, now));
    kept
}

/// `time_ns` (nanoseconds since the epoch) in the local time zone, which is where people
/// draw the lines between days. Falls back to UTC where the zone cannot be read.
pub fn local_time(time_ns: i128) -> OffsetDateTime {
    let utc =
        OffsetDateTime::from_unix_timestamp_nanos(time_ns).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let offset = local_offset_seconds(utc.unix_timestamp())
        .and_then(|s| UtcOffset::from_whole_seconds(s).ok())
        .unwrap_or(UtcOffset::UTC);
    utc.to_offset(offset)
}

/// The local UTC offset in force at `unix_seconds`. (The `time` crate declines to answer
/// once a process has threads, and a save that runs gc afterwards has them.) `None`
/// outside jiff's range of instants, a day short of `time`'s at either end.
fn local_offset_seconds(unix_seconds: i64) -> Option<i32> {
    let instant = jiff::Timestamp::from_second(unix_seconds).ok()?;
    Some(local_zone().to_offset(instant).seconds())
}

/// The local time zone, read once per process, as the C library reads it for
/// `localtime_r`: from `TZ` (a zone name, a zone file's path or a POSIX TZ string), else
/// from `/etc/localtime`; UTC when neither can be read.
fn local_zone() -> &'static TimeZone {
    static ZONE: OnceLock<TimeZone> = OnceLock::new();
    ZONE.get_or_init(|| {
        TimeZone::try_system()
            .ok()
            .or_else(|| posix_zone_as_c_reads_it(&std::env::var("TZ").ok()?))
            .unwrap_or(TimeZone::UTC)
    })
}

/// The POSIX TZ strings that jiff declines and the C library reads: one behind a `:`
/// (`:JST-9`), and one naming a summer time without the rule for it (`FOO5BAR`), which
/// then follows the US rule, as in glibc.
fn posix_zone_as_c_reads_it(tz: &str) -> Option<TimeZone> {
    let tz = tz.strip_prefix(':').unwrap_or(tz);
    TimeZone::posix(tz)
        .or_else(|_| TimeZone::posix(&format!("{tz},M3.2.0,M11.1.0")))
        .ok()
}

#[cfg(test)]
mod tests;
