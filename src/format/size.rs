//! Sizes as people write and read them: the one parser of sizes in settings and
//! arguments, and the one way a byte count is printed.

use crate::{Error, Result};

/// Parses a size, for `--max-size` and the size settings: a number with an optional K, M,
/// G or T suffix (powers of 1024, "B"/"iB" after it allowed), e.g. `2G`, `500M`, `1.5GiB`.
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = || {
        Error::InvalidArgument(format!(
            "'{text}' is not a size: use a number with K, M, G or T, e.g. 500M or 2G"
        ))
    };
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let without_b = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (number, scale) = match without_b.chars().last() {
        Some('k') => (&without_b[..without_b.len() - 1], 1u64 << 10),
        Some('m') => (&without_b[..without_b.len() - 1], 1 << 20),
        Some('g') => (&without_b[..without_b.len() - 1], 1 << 30),
        Some('t') => (&without_b[..without_b.len() - 1], 1 << 40),
        _ => (without_b, 1),
    };
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// A byte count for people: 1.2 MiB.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_or_say_why_not() {
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("500m").unwrap(), 500 << 20);
        assert_eq!(parse_size("100KB").unwrap(), 100 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size(" 1g ").unwrap(), 1 << 30);
        assert_eq!(parse_size("0").unwrap(), 0);
        assert!(parse_size("m").is_err());
        assert!(parse_size("-5").is_err());
        assert!(parse_size("99999999999999999999g").is_err());
        for bad in ["", "G", "-1G", "2X", "1e400"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn byte_counts_read_as_people_write_them() {
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(12), "12 B");
    }
}
