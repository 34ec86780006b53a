//! The one clock: what "now" is for every part of the tool, and how a time is written.

/// The current time in nanoseconds since the Unix epoch: the system clock, or, in
/// builds with the `test-hooks` feature, `GIT_CHECKPOINT_NOW` when it holds an RFC 3339
/// time. Every part of the tool that needs "now" asks here.
pub fn now_ns() -> i128 {
    let hooked = std::env::var("GIT_CHECKPOINT_NOW")
        .ok()
        .filter(|_| cfg!(feature = "test-hooks"))
        .and_then(|text| parse_rfc3339(&text));
    match hooked {
        Some(t) => t,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0),
    }
}

/// A Unix time in nanoseconds as RFC 3339 in UTC.
pub fn rfc3339(time_ns: i128) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(time_ns)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// An RFC 3339 time (as [`rfc3339`] writes it, or with an offset) in nanoseconds since
/// the Unix epoch; `None` when `text` is not one.
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(time::OffsetDateTime::unix_timestamp_nanos)
}
