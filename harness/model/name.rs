//! The one rule for names that become parts of paths and file names (a scenario's name, a
//! cell's): 1 to 100 ASCII letters, digits, `-` or `_`, not starting with `-`. Scenario files and
//! records read back from elsewhere (pod logs, CSVs) pass the same check before any path is
//! built from them, so `../x`, `/`, `.` or a control character can never leave the output folder.

/// The longest name accepted.
pub const MAX_LEN: usize = 100;

/// Why `name` is not a valid name, or None when it is.
pub fn problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if name.len() > MAX_LEN {
        return Some(format!("is longer than {MAX_LEN} characters"));
    }
    if name.starts_with('-') {
        return Some("starts with '-'".into());
    }
    (!name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then(|| "must be letters, digits, '-' or '_'".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_pass() {
        for good in ["seed-matrix", "docker_default", "a", "p16"] {
            assert_eq!(problem(good), None, "{good}");
        }
        let long = "x".repeat(MAX_LEN + 1);
        for bad in [
            "",
            "../../x",
            "a/b",
            ".",
            "..",
            "-rf",
            "a b",
            "a\nb",
            "é",
            long.as_str(),
        ] {
            assert!(problem(bad).is_some(), "{bad:?}");
        }
    }
}
