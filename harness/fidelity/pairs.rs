//! The emulation against real torch, cell by cell, from the rows of a fidelity run: each
//! loader's outcomes over its runs, the crash steps, and the ratios of peak /dev/shm and img/s
//! (medians of the passing runs, with bootstrap intervals).
//!
//! Near a loader's peak the outcome is itself random for both loaders (which worker meets the
//! full tmpfs first is a race), so a cell is judged as `compare` judges a change: the emulation's
//! outcomes against torch's by Fisher's exact test of the shares and the exact rank test of the
//! crash steps ([`analysis::outcomes::judge`]), and the passing peak against the fidelity goal: the
//! rule is `verdict`'s. Real torch's later runs are held to the same test against its
//! earlier ones. The medians of the crash steps are reported beside the verdicts.

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::agreement::Verdict;
use crate::agreement::{judge, ratio};
pub(crate) use crate::agreement::{Ratio, Why, PEAK_TOLERANCE};
use analysis::outcomes::{self, Judgement};
use analysis::summary::{summarize, CellSummary};
use model::estimate::median;
use model::knobs::{Loader, TorchProfile};
use results::Row;

/// One cell against one torch.
#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    pub(crate) cell: String,
    pub(crate) environment: String,
    pub(crate) torch_version: String,
    pub(crate) profile: TorchProfile,
    pub(crate) emulated: CellSummary,
    pub(crate) torch: CellSummary,
    /// Peak /dev/shm of torch's passing runs over the emulation's (medians, with an interval).
    pub(crate) peak: Option<Ratio>,
    /// img/s of torch's passing runs over the emulation's.
    pub(crate) rate: Option<Ratio>,
    /// Median CPU per image (main and workers) of torch's passing runs over the emulation's.
    pub(crate) cpu_ratio: Option<f64>,
    /// Median CPU of the main process per step, torch's passing runs over the emulation's.
    pub(crate) main_cpu_ratio: Option<f64>,
    /// The emulation's outcomes judged against torch's (torch the baseline).
    pub(crate) outcomes: Judgement,
    pub verdict: Verdict,
    /// What made the verdict other than `agrees` (None when it agrees).
    pub(crate) why: Option<Why>,
    /// Median crash step of the emulation's crashed runs and of torch's, when both loaders
    /// crashed the same way most often.
    pub(crate) crash_step_medians: Option<(f64, f64)>,
    /// Real torch's later runs (the second half) against its earlier ones by the same rule;
    /// None with fewer than two runs.
    pub(crate) torch_self: Option<Verdict>,
}

/// One measure over the passing runs that have it.
fn passing(rows: &[&Row], measure: impl Fn(&Row) -> Option<f64>) -> Vec<f64> {
    rows.iter()
        .filter(|r| r.status.is_pass())
        .filter_map(|r| measure(r))
        .collect()
}

/// The ratio torch / emulated of one measure's medians over passing runs.
fn passing_ratio(
    torch: &[&Row],
    emulated: &[&Row],
    measure: impl Fn(&Row) -> Option<f64> + Copy,
) -> Option<f64> {
    ratio(
        median(&passing(torch, measure)),
        median(&passing(emulated, measure)),
    )
}

/// Whether both loaders crashed the same way most often.
fn same_crash(emulated: &CellSummary, torch: &CellSummary) -> bool {
    emulated.outcome.status == torch.outcome.status && !emulated.outcome.status.is_pass()
}

/// The median crash step of the runs that crashed.
fn median_crash_step(rows: &[&Row]) -> Option<f64> {
    let steps: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.crash_step)
        .map(|s| s as f64)
        .collect();
    median(&steps)
}

/// One side's runs summarised.
fn summary(rows: &[&Row]) -> CellSummary {
    let owned: Vec<Row> = rows.iter().map(|r| (*r).clone()).collect();
    summarize(&owned).remove(0)
}

/// Two sets of runs of one cell judged: the candidate's (`cand`) against the baseline's.
struct Judged {
    outcomes: Judgement,
    peak: Option<Ratio>,
    verdict: Verdict,
    why: Option<Why>,
}

fn judged(
    base_rows: &[&Row],
    cand_rows: &[&Row],
    base: &CellSummary,
    cand: &CellSummary,
) -> Judged {
    let outcomes = outcomes::judge(&base.outcomes, &cand.outcomes);
    let peak_of = |r: &Row| Some(r.peak_shm_bytes as f64);
    let (base_peaks, cand_peaks) = (passing(base_rows, peak_of), passing(cand_rows, peak_of));
    let peak = Ratio::of(&base_peaks, &cand_peaks);
    let passing_runs = base_peaks.len().min(cand_peaks.len());
    let (verdict, why) = judge(cand, base, &outcomes, peak, passing_runs);
    Judged {
        outcomes,
        peak,
        verdict,
        why,
    }
}

/// Real torch's later runs against its earlier ones, by the same rule.
fn self_agreement(real: &[&Row]) -> Option<Verdict> {
    if real.len() < 2 {
        return None;
    }
    let (earlier, later) = real.split_at(real.len().div_ceil(2));
    Some(judged(earlier, later, &summary(earlier), &summary(later)).verdict)
}

/// Pairs every torch cell with its emulated twin (same scenario, cell and profile).
pub fn pairs(rows: &[Row]) -> Vec<Pair> {
    let mut torch: BTreeMap<(String, String, String), Vec<&Row>> = BTreeMap::new();
    let mut order: Vec<(String, String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.loader == Loader::Torch) {
        let key = (
            r.scenario.clone(),
            r.cell.clone(),
            r.torch_version.clone().unwrap_or_default(),
        );
        if !torch.contains_key(&key) {
            order.push(key.clone());
        }
        torch.entry(key).or_default().push(r);
    }
    let mut out = Vec::new();
    for key in order {
        let real = &torch[&key];
        let profile = real[0].torch;
        let twins: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.loader == Loader::Emulated
                    && r.scenario == key.0
                    && r.cell == key.1
                    && r.torch == profile
            })
            .collect();
        if twins.is_empty() {
            continue;
        }
        let (emulated, torch_summary) = (summary(&twins), summary(real));
        let j = judged(real, &twins, &torch_summary, &emulated);
        out.push(Pair {
            cell: key.1.clone(),
            environment: real[0].environment.clone(),
            torch_version: key.2.clone(),
            profile,
            peak: j.peak,
            rate: Ratio::of(&torch_summary.rates, &emulated.rates),
            cpu_ratio: ratio(torch_summary.cpu_median, emulated.cpu_median),
            main_cpu_ratio: passing_ratio(real, &twins, |r| r.main_cpu_ms_per_step),
            outcomes: j.outcomes,
            verdict: j.verdict,
            why: j.why,
            crash_step_medians: same_crash(&emulated, &torch_summary)
                .then(|| median_crash_step(&twins).zip(median_crash_step(real)))
                .flatten(),
            torch_self: self_agreement(real),
            emulated,
            torch: torch_summary,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::Status;

    /// A row of the seed fixture, made one run of cell `c` with `loader`.
    fn run(loader: Loader, status: Status, crash_step: Option<u64>, peak_mib: u64) -> Row {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let mut r = results::csv::read(std::path::Path::new(path)).unwrap()[0].clone();
        r.cell = "c".into();
        r.loader = loader;
        r.torch = TorchProfile::Modern;
        r.torch_version = (loader == Loader::Torch).then(|| "2.15.0".into());
        r.status = status;
        r.crash_step = crash_step;
        r.peak_shm_bytes = peak_mib << 20;
        r.img_per_s = status.is_pass().then_some(2000.0 + peak_mib as f64);
        r
    }

    fn passes(loader: Loader, peaks: &[u64]) -> Vec<Row> {
        peaks
            .iter()
            .map(|p| run(loader, Status::Pass, None, *p))
            .collect()
    }

    fn crashes(loader: Loader, steps: &[u64]) -> Vec<Row> {
        steps
            .iter()
            .map(|s| run(loader, Status::Enospc, Some(*s), 64))
            .collect()
    }

    fn one(emulated: Vec<Row>, torch: Vec<Row>) -> Pair {
        let rows: Vec<Row> = emulated.into_iter().chain(torch).collect();
        let mut pairs = pairs(&rows);
        assert_eq!(pairs.len(), 1);
        pairs.remove(0)
    }

    #[test]
    fn a_boundary_cell_that_races_on_both_sides_is_never_a_difference() {
        // The 1 GiB seed cell measured here: torch crashed at 49, 18, 25 and the emulation at
        // 13, passed, 48 (one run more each, as --repeat 4 gives).
        let mut emulated = crashes(Loader::Emulated, &[13, 48, 30]);
        emulated.extend(passes(Loader::Emulated, &[1000]));
        let p = one(emulated, crashes(Loader::Torch, &[49, 18, 25, 40]));
        assert_ne!(p.verdict, Verdict::Differs, "{p:?}");
        // One run a side: a pass against a crash cannot be told from chance.
        let p = one(
            passes(Loader::Emulated, &[100]),
            crashes(Loader::Torch, &[9]),
        );
        assert_eq!(
            (p.verdict, p.why),
            (Verdict::NotJudged, Some(Why::Outcomes))
        );
        // Both crashed the same way at other steps: only the steps differ, and one run a side
        // cannot say by how much beyond chance.
        let p = one(
            crashes(Loader::Emulated, &[3]),
            crashes(Loader::Torch, &[5]),
        );
        assert_eq!(
            (p.verdict, p.why),
            (Verdict::NotJudged, Some(Why::CrashSteps))
        );
        // The same outcome in every run is agreement, however few.
        let p = one(
            crashes(Loader::Emulated, &[1]),
            crashes(Loader::Torch, &[1]),
        );
        assert_eq!(p.verdict, Verdict::Agrees);
    }

    #[test]
    fn a_real_difference_is_flagged_with_enough_runs() {
        // Retaining every second batch crashes the emulation early where torch passes.
        let p = one(
            crashes(Loader::Emulated, &[8, 9, 8, 10]),
            passes(Loader::Torch, &[1250, 1250, 1250, 1250]),
        );
        assert_eq!((p.verdict, p.why), (Verdict::Differs, Some(Why::Outcomes)));
        assert!(p.outcomes.share_p.unwrap() < 0.05, "{p:?}");
        // Crash steps apart in every run.
        let p = one(
            crashes(Loader::Emulated, &[3, 4, 3, 4]),
            crashes(Loader::Torch, &[12, 14, 13, 15]),
        );
        assert_eq!(p.verdict, Verdict::Differs, "{p:?}");
        assert!(p.outcomes.step_p.unwrap() < 0.05);
    }

    #[test]
    fn a_passing_peak_outside_ten_percent_differs_only_beyond_chance() {
        // The seed loader at 2 GiB as the issue measured it on another machine: 82-87% of torch's.
        let low = [1027, 1040, 1070, 1090]; // MiB: 1,077-1,143 MB
        let p = one(
            passes(Loader::Emulated, &low),
            passes(Loader::Torch, &[1250; 4]),
        );
        assert_eq!(
            (p.verdict, p.why),
            (Verdict::Differs, Some(Why::PassingPeak))
        );
        let peak = p.peak.unwrap();
        assert!(
            peak.value > 1.1 && peak.interval.unwrap().0 > 1.1,
            "{peak:?}"
        );
        // Two runs a side cannot say it is not chance.
        let p = one(
            passes(Loader::Emulated, &low[..2]),
            passes(Loader::Torch, &[1250; 2]),
        );
        assert_eq!(
            (p.verdict, p.why),
            (Verdict::NotJudged, Some(Why::PassingPeak))
        );
        // Within 10%: agrees, and an interval that reaches into the band is not a difference.
        let p = one(
            passes(Loader::Emulated, &[1150; 4]),
            passes(Loader::Torch, &[1250; 4]),
        );
        assert_eq!((p.verdict, p.why), (Verdict::Agrees, None));
        let p = one(
            passes(Loader::Emulated, &[1000, 1010, 1200, 1240]),
            passes(Loader::Torch, &[1250; 4]),
        );
        assert_ne!(p.verdict, Verdict::Differs, "{p:?}");
    }

    #[test]
    fn torch_is_held_to_the_same_rule_against_itself() {
        let torch = crashes(Loader::Torch, &[40, 9, 30, 12]);
        let p = one(crashes(Loader::Emulated, &[20, 21]), torch);
        assert_eq!(p.torch_self, Some(Verdict::NotJudged));
        let p = one(
            passes(Loader::Emulated, &[1]),
            passes(Loader::Torch, &[1, 1]),
        );
        assert_eq!(p.torch_self, Some(Verdict::Agrees));
        // Halves of two runs and one that all passed alike agree, though too few to test.
        let p = one(
            passes(Loader::Emulated, &[1]),
            passes(Loader::Torch, &[1, 1, 1]),
        );
        assert_eq!(p.torch_self, Some(Verdict::Agrees));
    }
}
