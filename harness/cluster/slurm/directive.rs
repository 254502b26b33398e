//! What a user's value may be in a batch script `slurm script` writes, and how it is written
//! there. The script runs: a line break in a value would be a line of its own, run by bash. So
//! values are checked (no control characters anywhere; `--mem` and `--time` in the syntax Slurm
//! defines for them) and quoted for the line they go in: shell quoting for lines bash runs, and
//! for `#SBATCH` lines Slurm's own reading of them (sbatch's `_get_argument`: words split at
//! blanks, `"` and `'` quote, `\` escapes the next character, an unquoted `#` starts a comment,
//! and `packjob`/`hetjob` anywhere on the line is blanked out, so a value holding either cannot
//! be written at all).

use results::log_lines::excerpt;

/// A flag's value the script cannot hold, and why.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {value}: {why}")]
pub struct BadScriptValue {
    pub(crate) flag: &'static str,
    /// The value escaped and quoted (`"gpu\ntouch PWNED"`), cut to a readable length.
    pub(crate) value: String,
    pub(crate) why: String,
}

impl BadScriptValue {
    pub(crate) fn new(flag: &'static str, value: &str, why: impl Into<String>) -> BadScriptValue {
        BadScriptValue {
            flag,
            value: format!("\"{}\"", excerpt(value)),
            why: why.into(),
        }
    }
}

/// Refuses control characters (a line break would end the line the value is on).
pub(crate) fn no_control(flag: &'static str, value: &str) -> Result<(), BadScriptValue> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(BadScriptValue::new(
            flag,
            value,
            format!(
                "holds the control character {c:?}: a batch script's values are one line of text"
            ),
        )),
        None => Ok(()),
    }
}

/// A value for an `#SBATCH` line: checked, then quoted as sbatch reads it.
pub(crate) fn directive(flag: &'static str, value: &str) -> Result<String, BadScriptValue> {
    no_control(flag, value)?;
    let lower = value.to_ascii_lowercase();
    if lower.contains("packjob") || lower.contains("hetjob") {
        return Err(BadScriptValue::new(
            flag,
            value,
            "sbatch blanks out 'packjob' and 'hetjob' wherever they stand on an #SBATCH line, so it cannot hold this value",
        ));
    }
    if value.is_empty() {
        return Err(BadScriptValue::new(flag, value, "is empty"));
    }
    let bare = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-+/:%=,@[]&|!*()".contains(&b));
    Ok(match bare {
        true => value.to_string(),
        false => format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")),
    })
}

/// `--mem`: a whole number with an optional K, M, G or T (megabytes without one), as sbatch
/// takes it.
pub(crate) fn mem(value: &str) -> Result<(), BadScriptValue> {
    no_control("--mem", value)?;
    let digits = value.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    let ok = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && value.len() - digits.len() <= 1;
    match ok {
        true => Ok(()),
        false => Err(BadScriptValue::new(
            "--mem",
            value,
            "write a size as sbatch takes it: a whole number with an optional K, M, G or T suffix (16G, 4096M, 4096)",
        )),
    }
}

/// `--time`: one of Slurm's formats (minutes, minutes:seconds, hours:minutes:seconds,
/// days-hours, days-hours:minutes, days-hours:minutes:seconds), or UNLIMITED / INFINITE.
pub(crate) fn time(value: &str) -> Result<(), BadScriptValue> {
    no_control("--time", value)?;
    let numbers = |s: &str, most: usize| {
        let parts: Vec<&str> = s.split(':').collect();
        parts.len() <= most
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let ok = match value.split_once('-') {
        _ if ["unlimited", "infinite"].contains(&value.to_ascii_lowercase().as_str()) => true,
        Some((days, rest)) => numbers(days, 1) && numbers(rest, 3),
        None => numbers(value, 3),
    };
    match ok {
        true => Ok(()),
        false => Err(BadScriptValue::new(
            "--time",
            value,
            "write a time limit as sbatch takes it: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds (30, 1:00:00, 2-12)",
        )),
    }
}

/// The output directory as Slurm's `--output` pattern holds it: `%` doubled (it would start a
/// replacement), a backslash refused (it turns every replacement off, so the tasks' files would
/// all be one, named `%A_%a` literally).
pub fn output_dir(value: &str) -> Result<String, BadScriptValue> {
    no_control("--output-dir", value)?;
    if value.contains('\\') {
        return Err(BadScriptValue::new(
            "--output-dir",
            value,
            "holds a backslash, which turns off Slurm's %A and %a in the output file pattern: choose a directory without one",
        ));
    }
    Ok(value.replace('%', "%%"))
}

/// A node name (or hostlist) for `--nodelist`: letters, digits, '-', '_', '.', and brackets
/// for ranges (`node[01-04]`).
pub fn node(value: &str) -> Result<(), BadScriptValue> {
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    match ok {
        true => Ok(()),
        false => Err(BadScriptValue::new(
            "--nodelist",
            value,
            "a node name holds only letters, digits, '-', '_' and '.'",
        )),
    }
}

/// `s` as one shell word: the results' own quoting (`shlex`), so the script and the command a
/// row records quote alike.
pub fn shell_word(s: &str) -> String {
    results::row_build::shell_words(std::iter::once(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_sizes_and_times_are_checked_in_slurms_syntax() {
        for good in ["16G", "4096", "4096M", "1t", "0"] {
            assert!(mem(good).is_ok(), "{good}");
        }
        for bad in ["", "G", "16GB", "1.5G", "16G\ntouch x", "-1", "16 G"] {
            assert!(mem(bad).is_err(), "{bad:?}");
        }
        for good in [
            "30",
            "0:20",
            "1:00:00",
            "2-12",
            "2-12:30",
            "2-12:30:00",
            "UNLIMITED",
        ] {
            assert!(time(good).is_ok(), "{good}");
        }
        for bad in ["", "1:2:3:4", "2-", "-5", "1h", "2-1:2:3:4", "30\nid"] {
            assert!(time(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn directive_values_are_quoted_as_sbatch_reads_them_or_refused() {
        assert_eq!(directive("--partition", "gpu").unwrap(), "gpu");
        assert_eq!(directive("--constraint", "a100&ib").unwrap(), "a100&ib");
        assert_eq!(
            directive("--partition", "a b#\"c\\").unwrap(),
            "\"a b#\\\"c\\\\\""
        );
        let e = directive("--partition", "gpu\ntouch PWNED").unwrap_err();
        assert!(
            e.to_string().starts_with(
                "--partition \"gpu\\ntouch PWNED\": holds the control character '\\n'"
            ),
            "{e}"
        );
        assert!(directive("--constraint", "x HetJob y").is_err());
        assert_eq!(output_dir("/a b/50%").unwrap(), "/a b/50%%");
        assert!(output_dir("/a\\b").is_err());
    }
}
