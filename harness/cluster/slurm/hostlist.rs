//! A Slurm host list expanded into node names, as `scontrol show hostnames` expands it:
//! comma-separated names, each with any number of bracketed ranges (`gpu[01-04,7]`,
//! `rack[1-2]-n[1-3]`), a range's zero padding kept. `--nodelist` takes one, and shmbench
//! submits once per node, so the names must be whole: a bash word split on commas, as the
//! script's loop once did, cut `gpu[1-3,5]` into `gpu[1-3` and `5]`.

use super::directive::{self, BadScriptValue};

/// The most names one list may expand to: more is a typo (`n[1-100000]`), not a fleet.
const MOST: usize = 10_000;

/// The node names of `list`, in its order.
pub fn expand(list: &str) -> Result<Vec<String>, BadScriptValue> {
    let mut names = Vec::new();
    for item in split_top_level(list).map_err(|why| bad(list, why))? {
        if item.is_empty() {
            return Err(bad(list, "an empty name between commas"));
        }
        let mut expanded = vec![String::new()];
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..]
                .find(']')
                .map(|c| open + c)
                .ok_or_else(|| bad(list, "a '[' without its ']'"))?;
            let values = range_values(&rest[open + 1..close]).map_err(|why| bad(list, why))?;
            let prefix = &rest[..open];
            if expanded.len().saturating_mul(values.len()) > MOST {
                return Err(bad(list, &format!("more than {MOST} nodes")));
            }
            expanded = expanded
                .iter()
                .flat_map(|head| values.iter().map(move |v| format!("{head}{prefix}{v}")))
                .collect();
            rest = &rest[close + 1..];
        }
        if rest.contains(']') {
            return Err(bad(list, "a ']' without its '['"));
        }
        for name in expanded {
            let name = name + rest;
            directive::node(&name)?;
            names.push(name);
        }
        if names.len() > MOST {
            return Err(bad(list, &format!("more than {MOST} nodes")));
        }
    }
    Ok(names)
}

fn bad(list: &str, why: &str) -> BadScriptValue {
    BadScriptValue::new(
        "--nodelist",
        list,
        format!("not a Slurm host list ({why}): write names or ranges, e.g. gpu[01-04,7],cpu1"),
    )
}

/// The items of a list: split on the commas outside brackets.
fn split_top_level(list: &str) -> Result<Vec<&str>, &'static str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0u32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err("a '[' inside a range"),
            ']' if depth == 1 => depth = 0,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    Ok(items)
}

/// The values of a range's text (`01-04,7`), each as it is written (width kept).
fn range_values(text: &str) -> Result<Vec<String>, &'static str> {
    let mut values = Vec::new();
    for part in text.split(',') {
        let (from, to) = part.split_once('-').unwrap_or((part, part));
        let number = |s: &str| -> Result<u64, &'static str> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 9 {
                return Err("a range holds numbers, e.g. [1-4,7]");
            }
            s.parse().map_err(|_| "a range holds numbers, e.g. [1-4,7]")
        };
        let (lo, hi) = (number(from)?, number(to)?);
        if lo > hi {
            return Err("a range runs from low to high");
        }
        if (hi - lo) as usize >= MOST {
            return Err("a range of more than 10000 nodes");
        }
        let width = if from.starts_with('0') { from.len() } else { 0 };
        values.extend((lo..=hi).map(|n| format!("{n:0width$}")));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::expand;

    fn names(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list}: {e}"))
    }

    #[test]
    fn ranges_expand_as_scontrol_show_hostnames_does() {
        assert_eq!(names("gpu[1-3]"), ["gpu1", "gpu2", "gpu3"]);
        assert_eq!(
            names("gpu[01-03,7],cpu1"),
            ["gpu01", "gpu02", "gpu03", "gpu7", "cpu1"]
        );
        assert_eq!(names("r[1-2]-n[8-9]"), ["r1-n8", "r1-n9", "r2-n8", "r2-n9"]);
        assert_eq!(names("node01,node02"), ["node01", "node02"]);
        assert_eq!(names("a[9-10]b"), ["a9b", "a10b"]);
    }

    #[test]
    fn a_list_that_is_not_one_is_refused_with_why() {
        for (list, why) in [
            ("gpu[3-1]", "low to high"),
            ("gpu[1-", "without its ']'"),
            ("gpu1]", "without its '['"),
            ("gpu[a-b]", "numbers"),
            ("gpu[[1]]", "inside a range"),
            ("a,,b", "empty name"),
            ("n[1-100000]", "more than 10000"),
            (
                "n[1-100],m[1-100],o[1-100],p[1-100],q[1-100],r[1-9999]",
                "more than 10000",
            ),
            ("n1;touch PWNED", "a node name holds only"),
        ] {
            let refused = expand(list).unwrap_err().to_string();
            assert!(refused.contains(why), "{list}: {refused}");
        }
    }
}
