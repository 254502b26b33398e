//! Where the suite's time went: the integration tests that touch the machine run one at a time
//! behind a lane's lock (`common::serial()`, `common::slurm_serial()`), so a lane's total is the
//! least the suite can take. Each test appends `lane<TAB>seconds held<TAB>test` to `lanes.tsv` in
//! the scratch directory; this sums the lanes and names the longest holders.

use std::collections::BTreeMap;
use std::fmt::Write;

/// How many of the longest holders of each lane to name.
const LONGEST: usize = 8;

pub(crate) fn summary(held: &str) -> String {
    let mut lanes: BTreeMap<&str, Vec<(f64, &str)>> = BTreeMap::new();
    for line in held.lines() {
        let mut fields = line.splitn(3, '\t');
        let (Some(lane), Some(secs), Some(test)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if let Ok(secs) = secs.parse::<f64>() {
            lanes.entry(lane).or_default().push((secs, test));
        }
    }
    let mut out = String::new();
    for (lane, mut tests) in lanes {
        tests.sort_by(|a, b| b.0.total_cmp(&a.0));
        let total: f64 = tests.iter().map(|t| t.0).sum();
        let _ = writeln!(
            out,
            "== the {lane} lane: {} tests held it {total:.0} s in all; the longest:",
            tests.len()
        );
        for (secs, test) in tests.iter().take(LONGEST) {
            let _ = writeln!(out, "   {secs:6.1} s  {test}");
        }
    }
    out
}

/// Keeps every holder's time, not only the longest, where the build keeps its outputs
/// (`$CARGO_TARGET_DIR`, or `target/`): the scratch directory leaves with the run, and the
/// next question after "which lane is long" is "which of its 90 tests to shorten".
pub(crate) fn keep(held: &str) -> String {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::host::workspace_root().join("target"));
    let kept = target.join("lanes.tsv");
    match std::fs::create_dir_all(&target).and_then(|()| std::fs::write(&kept, held)) {
        Ok(()) => format!("   every test's time in its lane: {}", kept.display()),
        Err(e) => format!(
            "   could not keep the lanes' times in {}: {e}",
            kept.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_each_lane_and_names_its_longest_holders_first() {
        let held =
            "machine\t2.5\tcells::a\nslurm\t9.0\tslurm::b\nmachine\t7.0\tcells::c\nbad line\n";
        let text = summary(held);
        assert!(
            text.contains("the machine lane: 2 tests held it 10 s"),
            "{text}"
        );
        assert!(
            text.contains("the slurm lane: 1 tests held it 9 s"),
            "{text}"
        );
        let c = text.find("cells::c").unwrap();
        let a = text.find("cells::a").unwrap();
        assert!(c < a, "longest first: {text}");
    }
}
