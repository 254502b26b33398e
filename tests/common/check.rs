//! What `shmbench check --format json` printed, as tests read it.

use super::*;

/// The JSON a command printed on stdout.
pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The rule ids of a check report's findings, in its order.
pub fn rule_ids(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"]["id"].as_str().unwrap().to_string())
        .collect()
}
