//! Property tests of the parsers users and other machines feed: scenario TOML, cell records and
//! configs, byte sizes. They must reject garbage with an error, never panic, and what they
//! accept must survive being written out and read back. CI runs a
//! few hundred cases each; `PROPTEST_CASES=100000 cargo test --release --test fuzz` runs longer.

use proptest::prelude::*;

use shmbench::model::config::CellConfig;
use shmbench::model::knobs::{Knobs, TorchProfile};
use shmbench::model::record::{CellRecord, Status};
use shmbench::model::size::ByteSize;
use shmbench::plan::resolve::{Identity, Platform, Resolve};
use shmbench::plan::scenario::{Scenario, SEED_MATRIX};

/// Fragments scenario files are made of, to reach deeper than random bytes.
fn scenario_text() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "name",
        "environment",
        "shm-size",
        "shm_size",
        "workers",
        "prefetch",
        "batch",
        "shape",
        "dtype",
        "strategy",
        "torch",
        "steps",
        "epochs",
        "runtime",
        "ipc",
        "memory",
        "retain-every",
        "compute-ms",
        "timeout-s",
        "claim",
        "pin-memory",
        "bogus",
    ]);
    let value = prop::sample::select(vec![
        "\"64m\"",
        "0",
        "-1",
        "18446744073709551616",
        "1e30",
        "\"1e30g\"",
        "\"3x224x224\"",
        "\"3x0\"",
        "true",
        "\"file_system\"",
        "\"nope\"",
        "{ status = \"crash\", crash-step = 2 }",
        "[1, 2]",
        "\"../../etc\"",
        "1.5",
    ]);
    let line = (key, value).prop_map(|(k, v)| format!("{k} = {v}\n"));
    let header = prop::sample::select(vec![
        "[defaults]\n",
        "[[cells]]\n",
        "[cells]\n",
        "",
        "name = \"s\"\n",
    ]);
    prop::collection::vec((header, prop::collection::vec(line, 0..5)), 0..5).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(h, lines)| format!("{h}{}", lines.concat()))
            .collect()
    })
}

proptest! {
    #[test]
    fn scenario_parser_never_panics_on_bytes(text in "\\PC{0,400}") {
        let _ = Scenario::parse(&text, "fuzz.toml");
    }

    #[test]
    fn scenario_parser_and_planner_never_panic(text in scenario_text()) {
        if let Ok(s) = Scenario::parse(&text, "fuzz.toml") {
            let _ = s.plan(&Knobs::default(), None, &Platform::fixed(1 << 34, false));
        }
    }

    #[test]
    fn size_parser_never_panics_and_round_trips(text in "[0-9.\\-e ]{0,24}[kmgtKMGTiIbB]{0,3}") {
        if let Ok(size) = ByteSize::parse(&text) {
            // What parsed prints (one decimal in its largest unit) and parses again to a size
            // within that rounding: 0.05 of the unit, and exactly where the unit divides it.
            let printed = size.to_string();
            let again = ByteSize::parse(&printed.replace(' ', ""));
            prop_assert!(again.is_ok(), "{printed} does not parse");
            let (a, b) = (size.bytes(), again.unwrap().bytes());
            let unit = [1u64 << 40, 1 << 30, 1 << 20, 1 << 10].into_iter().find(|u| a >= *u).unwrap_or(1);
            prop_assert!(a.abs_diff(b) <= unit / 20 + 1, "{a} printed {printed} reads {b}");
            if a % unit == 0 {
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn resolved_configs_round_trip_through_json(
        workers in 1u32..64,
        batch in 1u32..512,
        shm_mib in proptest::option::of(1u64..4096),
        pin in any::<bool>(),
        torch in prop::sample::select(vec![TorchProfile::Legacy, TorchProfile::Modern]),
    ) {
        // The JSON a cell receives is the config the harness resolved, knob for knob (the knobs
        // are flattened into it: a lost or renamed one would not come back).
        let knobs = Knobs {
            workers: Some(workers),
            batch: Some(batch),
            shape: Some("3x32x32".parse().unwrap()),
            shm_size: shm_mib.map(|m| ByteSize(m << 20)),
            pin_memory: Some(pin),
            torch: Some(torch),
            ..Knobs::default()
        };
        let platform = Platform::fixed(1 << 34, false);
        let config = knobs.resolve(Identity::default(), &platform).unwrap();
        let json = serde_json::to_string(&config).unwrap();
        let back: CellConfig = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, config);
    }

    #[test]
    fn mutated_records_never_panic_and_what_parses_round_trips(cut in 0usize..4000, byte in any::<u8>()) {
        // A real record (a seed cell that failed to run), corrupted at a random byte or cut
        // there. Whatever still parses writes out and reads back as the same record.
        let seed = Scenario::parse(SEED_MATRIX, "seed").unwrap();
        let config = seed.plan(&Knobs::default(), None, &Platform::fixed(1 << 34, false)).unwrap().remove(0);
        let record = CellRecord::failed_to_run(config, Status::Error, "fuzz".into());
        let mut bytes = serde_json::to_string(&record).unwrap().into_bytes();
        let at = cut % bytes.len();
        bytes[at] = byte;
        let text = String::from_utf8_lossy(&bytes[..]).into_owned();
        for candidate in [text.as_str(), text.get(..at).unwrap_or("")] {
            if let Ok(parsed) = serde_json::from_str::<CellRecord>(candidate) {
                let _ = parsed.config.validate(1 << 34);
                let again = serde_json::to_string(&parsed).unwrap();
                prop_assert_eq!(serde_json::from_str::<CellRecord>(&again).unwrap(), parsed);
            }
        }
    }
}
