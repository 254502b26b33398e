//! UTC timestamps: RFC 3339 for records, a compact form of the same instant for file names.

use std::time::SystemTime;

/// `2026-11-30T03:14:15Z`
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// `20261130T031415Z`, safe in file names.
pub fn compact_now() -> String {
    compact(&rfc3339_now())
}

fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// The RFC 3339 form without its separators.
fn compact(rfc3339: &str) -> String {
    rfc3339.chars().filter(|c| *c != '-' && *c != ':').collect()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn known_dates() {
        let at = |secs| super::rfc3339(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_796_000_000), "2026-11-30T00:53:20Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::compact(&at(1_796_000_000)), "20261130T005320Z");
    }
}
