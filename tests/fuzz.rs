//! Property tests of the parsers users and other machines feed: scenario TOML, cell records,
//! byte sizes and results rows. They must reject garbage with an error, never panic. CI runs a
//! few hundred cases each; `PROPTEST_CASES=100000 cargo test --release --test fuzz` runs longer.

use proptest::prelude::*;

use shmbench::model::config::CellConfig;
use shmbench::model::knobs::Knobs;
use shmbench::model::record::CellRecord;
use shmbench::model::size::ByteSize;
use shmbench::plan::resolve::Platform;
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
            // Whatever parsed prints and parses again to a size no larger.
            let again = ByteSize::parse(&size.to_string().replace(' ', ""));
            prop_assert!(again.is_ok());
        }
    }

    #[test]
    fn cell_record_parser_never_panics(text in "\\PC{0,300}") {
        let _ = serde_json::from_str::<CellRecord>(&text);
        let _ = serde_json::from_str::<CellConfig>(&text);
    }

    #[test]
    fn mutated_records_never_panic(cut in 0usize..2000, byte in any::<u8>()) {
        // A real record, cut or corrupted at a random place.
        let seed = Scenario::parse(SEED_MATRIX, "seed").unwrap();
        let config = seed.plan(&Knobs::default(), None, &Platform::fixed(1 << 34, false)).unwrap().remove(0);
        let json = serde_json::to_string(&config).unwrap();
        let mut bytes = json.into_bytes();
        let at = cut % bytes.len();
        bytes[at] = byte;
        let text = String::from_utf8_lossy(&bytes[..]).into_owned();
        if let Ok(c) = serde_json::from_str::<CellConfig>(&text) {
            let _ = c.validate(1 << 34);
        }
        let _ = serde_json::from_str::<CellConfig>(text.get(..at).unwrap_or(""));
    }
}
