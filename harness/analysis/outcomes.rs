//! A cell's outcomes over its repeats as a distribution (the share of each outcome, the crash
//! steps of the crashed runs), and whether two such distributions differ beyond chance.
//!
//! Near a loader's peak the outcome is itself random (which worker's allocation meets the full
//! tmpfs first is a race), so a change of outcome is judged as img/s is: never from one run per
//! side. The shares are compared by Fisher's exact test, per outcome (pass, each crash kind),
//! Bonferroni-corrected over the outcomes seen; the crash steps of the commonest crash kind by
//! the exact rank test. A change is flagged when either test is below [`ALPHA`].

use std::collections::BTreeMap;

use serde::Serialize;

use super::exact_tests::{
    detectable_share, detectable_shift, fisher_two_sided, rank_test_two_sided,
};
use super::runs::Outcome;
use model::estimate::median;
use model::record::Status;

/// The level at which an outcome change is claimed (two-sided).
pub const ALPHA: f64 = 0.05;

/// The runs a side needs for an always-pass to always-crash flip to reach [`ALPHA`] (4 vs 4:
/// p = 2/70 = 0.029; 3 vs 3: p = 0.10).
pub const RUNS_FOR_A_FLIP: usize = 4;

/// One cell's outcomes over its runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Shares {
    pub runs: usize,
    pub passes: usize,
    /// Runs of each crash kind, and the crash steps they reported (ascending).
    pub crashes: BTreeMap<Status, usize>,
    pub crash_steps: BTreeMap<Status, Vec<u64>>,
}

impl Shares {
    pub fn of(outcomes: &[Outcome]) -> Shares {
        let mut shares = Shares {
            runs: outcomes.len(),
            ..Shares::default()
        };
        for o in outcomes {
            if o.status.is_pass() {
                shares.passes += 1;
            } else {
                *shares.crashes.entry(o.status).or_default() += 1;
                let steps = shares.crash_steps.entry(o.status).or_default();
                steps.extend(o.crash_step);
            }
        }
        for steps in shares.crash_steps.values_mut() {
            steps.sort_unstable();
        }
        shares
    }

    /// Runs that ended as `status`.
    fn count(&self, status: Status) -> usize {
        match status {
            Status::Pass => self.passes,
            s => self.crashes.get(&s).copied().unwrap_or(0),
        }
    }

    /// Whether its runs disagree (some pass and some crash, or two crash kinds): the size is
    /// marginal for this loader.
    pub fn is_mixed(&self) -> bool {
        let kinds = self.crashes.len() + usize::from(self.passes > 0);
        kinds > 1
    }

    /// Whether some runs passed and some crashed: the size is marginal for this loader. Two
    /// crash kinds alone (SIGBUS in one run, ENOSPC in the next: the legacy allocator's write
    /// meets the full tmpfs before its fault does) are not: every run ran out.
    pub fn passes_and_crashes(&self) -> bool {
        self.passes > 0 && self.passes < self.runs
    }

    pub fn pass_share(&self) -> f64 {
        self.passes as f64 / self.runs.max(1) as f64
    }

    /// The 95% Wilson score interval of the pass share (None: no runs).
    pub fn pass_share_interval(&self) -> Option<(f64, f64)> {
        if self.runs == 0 {
            return None;
        }
        let (n, p, z) = (self.runs as f64, self.pass_share(), 1.96f64);
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
        Some(((centre - half).max(0.0), (centre + half).min(1.0)))
    }
}

impl std::fmt::Display for Shares {
    /// "passes 2 of 5; sigbus 3 of 5 at steps 9-23".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.runs;
        let mut parts = Vec::new();
        if self.passes > 0 {
            parts.push(format!("passes {} of {n}", self.passes));
        }
        for (status, runs) in &self.crashes {
            let steps = &self.crash_steps[status];
            let at = match (steps.first(), steps.last()) {
                (Some(a), Some(b)) if a == b => format!(" at step {a}"),
                (Some(a), Some(b)) => format!(" at steps {a}-{b}"),
                _ => String::new(),
            };
            parts.push(format!("{status} {runs} of {n}{at}"));
        }
        f.write_str(&parts.join("; "))
    }
}

/// Whether two cells' outcomes differ beyond chance, and what these repeats could have seen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judgement {
    pub baseline: Shares,
    pub candidate: Shares,
    /// Whether a test could reach [`ALPHA`] with these run counts at all.
    pub judged: bool,
    /// A change beyond chance, and whether it is for the worse (less passing, earlier crashes).
    pub changed: bool,
    pub worse: bool,
    /// Fisher's p of the shares (Bonferroni-corrected over the outcomes), and the rank test's
    /// of the crash steps (None: too few crashed runs on a side to compare).
    pub share_p: Option<f64>,
    pub step_p: Option<f64>,
    /// The smallest change of pass share, and shift of crash steps, these runs can detect.
    pub detectable_share: Option<f64>,
    pub detectable_shift: Option<u64>,
    /// What the judgement found (`present::outcomes` words it, e.g. "passes 5 of 5 -> sigbus 5
    /// of 5 at step 1: beyond chance at p < 0.05 (Fisher p = 0.008)"; JSON carries its code as
    /// `note_code` beside those words as `note`).
    #[serde(rename = "note_code")]
    pub note: Note,
}

/// What a [`Judgement`] found; its numbers are the judgement's (the shares, the p-values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// Too few runs to judge, and both sides had the same outcomes.
    NotJudgedSame,
    /// Too few runs to judge, and the sides' outcomes differ.
    NotJudged,
    /// Changed beyond chance.
    BeyondChance,
    /// Judged, and both sides had the same outcomes.
    TheSame,
    /// Judged: the outcomes differ within chance.
    WithinChance,
}

/// Compares the crash steps of the crash kind both sides have most of, when each has two.
fn step_test(base: &Shares, cand: &Shares) -> Option<(f64, bool)> {
    let (x, y) = base
        .crash_steps
        .iter()
        .filter_map(|(status, xs)| Some((xs, cand.crash_steps.get(status)?)))
        .filter(|(xs, ys)| xs.len() >= 2 && ys.len() >= 2)
        .max_by_key(|(xs, ys)| xs.len() + ys.len())?;
    let xf: Vec<f64> = x.iter().map(|s| *s as f64).collect();
    let yf: Vec<f64> = y.iter().map(|s| *s as f64).collect();
    let earlier = median(&yf) < median(&xf);
    Some((rank_test_two_sided(&xf, &yf), earlier))
}

/// Fisher's test per outcome seen on either side, Bonferroni-corrected: the smallest p.
fn share_test(base: &Shares, cand: &Shares) -> f64 {
    let mut outcomes: Vec<Status> = base
        .crashes
        .keys()
        .chain(cand.crashes.keys())
        .copied()
        .collect();
    if base.passes + cand.passes > 0 {
        outcomes.push(Status::Pass);
    }
    outcomes.sort();
    outcomes.dedup();
    // Two outcomes are one comparison (pass vs crash): correct for the others only.
    let comparisons = outcomes.len().saturating_sub(1).max(1) as f64;
    outcomes
        .iter()
        .map(|s| {
            let (a, c) = (base.count(*s) as u64, cand.count(*s) as u64);
            let p = fisher_two_sided(a, base.runs as u64 - a, c, cand.runs as u64 - c);
            (p * comparisons).min(1.0)
        })
        .fold(1.0, f64::min)
}

/// Judges the candidate's outcomes against the baseline's.
pub fn judge(base: &[Outcome], cand: &[Outcome]) -> Judgement {
    let (b, c) = (Shares::of(base), Shares::of(cand));
    let detect_share = detectable_share(b.runs as u64, c.runs as u64, ALPHA);
    let detect_shift = b
        .crash_steps
        .values()
        .max_by_key(|s| s.len())
        .and_then(|steps| detectable_shift(steps, c.runs - c.passes, ALPHA));
    let mut j = Judgement {
        judged: detect_share.is_some(),
        changed: false,
        worse: false,
        share_p: None,
        step_p: None,
        detectable_share: detect_share,
        detectable_shift: detect_shift,
        note: Note::NotJudged,
        baseline: b,
        candidate: c,
    };
    if !j.judged {
        if j.baseline == j.candidate {
            j.note = Note::NotJudgedSame;
        }
        return j;
    }
    let share_p = share_test(&j.baseline, &j.candidate);
    j.share_p = Some(share_p);
    let steps = step_test(&j.baseline, &j.candidate);
    j.step_p = steps.map(|(p, _)| p);
    let shares_moved = share_p <= ALPHA;
    let steps_moved = steps.is_some_and(|(p, _)| p <= ALPHA);
    j.changed = shares_moved || steps_moved;
    j.worse = (shares_moved && j.candidate.pass_share() < j.baseline.pass_share())
        || (steps_moved && steps.is_some_and(|(_, earlier)| earlier));
    j.note = match (j.changed, j.baseline == j.candidate) {
        (true, _) => Note::BeyondChance,
        (false, true) => Note::TheSame,
        (false, false) => Note::WithinChance,
    };
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(spec: &[(Status, Option<u64>)]) -> Vec<Outcome> {
        spec.iter()
            .map(|(status, crash_step)| Outcome {
                status: *status,
                crash_step: *crash_step,
            })
            .collect()
    }

    fn pass(n: usize) -> Vec<Outcome> {
        runs(&vec![(Status::Pass, None); n])
    }

    fn sigbus(steps: &[u64]) -> Vec<Outcome> {
        steps
            .iter()
            .map(|s| Outcome {
                status: Status::Sigbus,
                crash_step: Some(*s),
            })
            .collect()
    }

    #[test]
    fn shares_say_how_often_and_where() {
        let mut o = pass(2);
        o.extend(sigbus(&[23, 9, 14]));
        let s = Shares::of(&o);
        assert_eq!(s.to_string(), "passes 2 of 5; sigbus 3 of 5 at steps 9-23");
        assert!(s.is_mixed() && s.passes_and_crashes());
        assert!(!Shares::of(&pass(3)).is_mixed());
        // Every run ran out, by SIGBUS or ENOSPC: two kinds, but no pass to be marginal with.
        let mut out = sigbus(&[1, 1]);
        out.push(Outcome {
            status: Status::Enospc,
            crash_step: Some(1),
        });
        let all_out = Shares::of(&out);
        assert!(all_out.is_mixed() && !all_out.passes_and_crashes());
        assert_eq!(
            Shares::of(&sigbus(&[4])).to_string(),
            "sigbus 1 of 1 at step 4"
        );
        // Wilson's interval: 5 of 5 is not certainty.
        let (lo, hi) = Shares::of(&pass(5)).pass_share_interval().unwrap();
        assert!((0.55..0.6).contains(&lo) && hi == 1.0, "{lo} {hi}");
    }

    #[test]
    fn one_run_a_side_is_never_judged_and_says_so() {
        let j = judge(&pass(1), &sigbus(&[4]));
        assert!(!j.judged && !j.changed);
        assert_eq!(j.note, Note::NotJudged);
        assert_eq!(judge(&pass(1), &pass(1)).note, Note::NotJudgedSame);
        // Three a side cannot show a flip either.
        assert!(!judge(&pass(3), &sigbus(&[1, 1, 1])).changed);
    }

    #[test]
    fn a_flip_with_enough_runs_is_a_change_for_the_worse() {
        let j = judge(&pass(4), &sigbus(&[1, 1, 1, 1]));
        assert!(j.judged && j.changed && j.worse, "{j:?}");
        assert_eq!(j.note, Note::BeyondChance);
        let back = judge(&sigbus(&[1, 1, 1, 1]), &pass(4));
        assert!(back.changed && !back.worse);
    }

    #[test]
    fn a_marginal_cell_repeated_is_not_a_change() {
        // The same race twice: shares and steps differ by chance.
        let mut a = pass(2);
        a.extend(sigbus(&[9, 14, 23]));
        let mut b = pass(3);
        b.extend(sigbus(&[11, 19]));
        let j = judge(&a, &b);
        assert!(j.judged && !j.changed, "{j:?}");
        assert_eq!(j.note, Note::WithinChance);
        assert_eq!(judge(&a, &a).note, Note::TheSame);
    }

    #[test]
    fn earlier_crashes_in_every_run_are_a_change_for_the_worse() {
        let j = judge(&sigbus(&[20, 21, 22, 23, 24]), &sigbus(&[5, 6, 5, 7, 6]));
        assert!(j.changed && j.worse, "{j:?}");
        assert!(j.step_p.unwrap() < 0.01);
        // Another crash kind in every run is a change, not a worse one.
        let enospc = runs(&[(Status::Enospc, Some(20)); 5]);
        let k = judge(&sigbus(&[20; 5]), &enospc);
        assert!(k.changed && !k.worse, "{k:?}");
    }
}
