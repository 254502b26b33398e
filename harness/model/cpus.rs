//! A CPU list as taskset and Docker's `--cpuset-cpus` write it (`0`, `0-1`, `0,2-3`): the CPUs a
//! cell's processes may run on (`--cpus`), so main and workers meet the same cores run after run.

use super::bad_value::BadValue;
use std::fmt;
use std::str::FromStr;

/// Sorted, without duplicates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// The highest CPU an affinity mask (glibc's cpu_set_t, 1024 bits) can name.
const MAX_CPU: usize = 1023;

impl FromStr for CpuList {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<CpuList, BadValue> {
        let bad = || {
            BadValue::new(s, format!("a CPU list: write CPU numbers (0 to {MAX_CPU}) and ranges, e.g. 0, 0-1 or 0,2-3"))
        };
        let mut cpus = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim().parse::<usize>(), b.trim().parse::<usize>()),
                None => (part.parse::<usize>(), part.parse::<usize>()),
            };
            match (lo, hi) {
                (Ok(lo), Ok(hi)) if lo <= hi && hi <= MAX_CPU => cpus.extend(lo..=hi),
                _ => return Err(bad()),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }
}

impl fmt::Display for CpuList {
    /// Ranges collapsed: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

serde_as_text!(CpuList);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_as_taskset_writes_them() {
        let list: CpuList = "3, 0-1,1".parse().unwrap();
        assert_eq!(list.0, vec![0, 1, 3]);
        assert_eq!(list.to_string(), "0-1,3");
        assert!("".parse::<CpuList>().is_err());
        assert!("2-1".parse::<CpuList>().is_err());
        assert!("a".parse::<CpuList>().is_err());
        assert!("99999".parse::<CpuList>().is_err());
    }
}
