//! A cell's outcomes over its repeats, and the judgement of two cells' outcomes, in the words
//! every output uses (`analysis::outcomes` holds the shares, the p-values and what was found).

use analysis::outcomes::{Judgement, Note, Shares, ALPHA, RUNS_FOR_A_FLIP};

/// How outcomes are judged.
pub const METHOD: &str =
    "Fisher's exact test of the pass and crash shares, a rank test of the crash steps";

/// What it takes to judge outcomes at all.
pub fn flip_needs() -> String {
    format!("a flip from always passing to always crashing needs {RUNS_FOR_A_FLIP} runs a side: --repeat {RUNS_FOR_A_FLIP}")
}

/// The shares, with what they say when the runs disagree: a marginal size when some passed
/// and some crashed; not marginal when every run crashed, only not always the same way.
pub fn described(shares: &Shares) -> String {
    if shares.passes_and_crashes() {
        format!("{shares} (mixed: the size is marginal for this loader)")
    } else if shares.is_mixed() {
        format!("{shares} (every run ran out of /dev/shm; how it failed varies)")
    } else {
        shares.to_string()
    }
}

/// The tests' p-values ("Fisher p = 0.008, crash steps rank test p = 0.030"); empty where
/// nothing was tested.
pub fn evidence(share_p: Option<f64>, step_p: Option<f64>) -> String {
    let Some(share_p) = share_p else {
        return String::new();
    };
    let mut tests = vec![format!("Fisher p = {share_p:.3}")];
    if let Some(p) = step_p {
        tests.push(format!("crash steps rank test p = {p:.3}"));
    }
    tests.join(", ")
}

/// What a judgement found, e.g. "passes 5 of 5 -> sigbus 5 of 5 at step 1: beyond chance at
/// p < 0.05 (Fisher p = 0.008)".
pub fn note(j: &Judgement) -> String {
    let (b, c) = (&j.baseline, &j.candidate);
    let runs = format!("{} and {} run(s)", b.runs, c.runs);
    let found = match j.note {
        Note::NotJudgedSame => return format!("{b} in both ({runs}: outcomes not judged)"),
        Note::NotJudged => {
            return format!("{b} -> {c}: not judged with {runs} ({})", flip_needs());
        }
        Note::BeyondChance => "beyond chance",
        Note::TheSame => "the same",
        Note::WithinChance => "within chance",
    };
    let evidence = evidence(j.share_p, j.step_p);
    format!("{b} -> {c}: {found} at p < {ALPHA} ({evidence})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::outcomes::judge;
    use analysis::runs::Outcome;
    use model::record::Status;

    fn runs(status: Status, steps: &[Option<u64>]) -> Vec<Outcome> {
        steps
            .iter()
            .map(|crash_step| Outcome {
                status,
                crash_step: *crash_step,
            })
            .collect()
    }

    fn pass(n: usize) -> Vec<Outcome> {
        runs(Status::Pass, &vec![None; n])
    }

    fn sigbus(steps: &[u64]) -> Vec<Outcome> {
        let steps: Vec<Option<u64>> = steps.iter().copied().map(Some).collect();
        runs(Status::Sigbus, &steps)
    }

    #[test]
    fn shares_say_when_the_runs_disagree() {
        let mut some = pass(2);
        some.extend(sigbus(&[23, 9, 14]));
        assert!(described(&Shares::of(&some))
            .ends_with("(mixed: the size is marginal for this loader)"));
        let mut out = sigbus(&[1, 1]);
        out.extend(runs(Status::Enospc, &[Some(1)]));
        assert_eq!(
            described(&Shares::of(&out)),
            "sigbus 2 of 3 at step 1; enospc 1 of 3 at step 1 (every run ran out of /dev/shm; how it failed varies)"
        );
        assert_eq!(described(&Shares::of(&pass(3))), "passes 3 of 3");
    }

    #[test]
    fn a_judgement_says_what_it_found_and_on_what_evidence() {
        assert_eq!(
            note(&judge(&pass(1), &sigbus(&[4]))),
            "passes 1 of 1 -> sigbus 1 of 1 at step 4: not judged with 1 and 1 run(s) \
             (a flip from always passing to always crashing needs 4 runs a side: --repeat 4)"
        );
        assert_eq!(
            note(&judge(&sigbus(&[1]), &sigbus(&[1]))),
            "sigbus 1 of 1 at step 1 in both (1 and 1 run(s): outcomes not judged)"
        );
        let flip = judge(&pass(4), &sigbus(&[1, 1, 1, 1]));
        assert_eq!(
            note(&flip),
            "passes 4 of 4 -> sigbus 4 of 4 at step 1: beyond chance at p < 0.05 (Fisher p = 0.029)"
        );
        let mut a = pass(2);
        a.extend(sigbus(&[9, 14, 23]));
        let mut b = pass(3);
        b.extend(sigbus(&[11, 19]));
        let within = note(&judge(&a, &b));
        assert!(
            within.contains(": within chance at p < 0.05 (Fisher p = "),
            "{within}"
        );
        assert!(within.contains(", crash steps rank test p = "), "{within}");
        assert!(note(&judge(&a, &a)).contains(": the same at p < 0.05"));
        assert_eq!(evidence(None, Some(0.5)), "");
    }
}
