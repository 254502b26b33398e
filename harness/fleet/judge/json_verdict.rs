//! The fleet's verdict as JSON: analysis's numbers and codes (`status`, each finding's
//! `measure` and `evidence`, every node's numbers in `compared`, findings or not, each
//! `not_judged` reason's `code`), and beside them the words the
//! table shows (`status_words`, `words`, `reason`) and each cell's whole key. Names from the
//! rows are JSON strings: JSON escapes whatever they hold.

use serde_json::{json, Value};

use super::text::{
    cell_name, counts, finding_words, measure_words, method, not_judged_words, reasons,
    status_words, summary,
};
use crate::judge::verdict::Verdict;
use present::cell_key;

/// The verdict, every node with its findings and the cells' norms.
pub fn render(v: &Verdict) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(v)?;
    let plain = |s: &str| s.to_string();
    let cells: Vec<Value> = v
        .cells
        .iter()
        .zip(&v.norms)
        .enumerate()
        .map(|(i, (key, norm))| {
            json!({
                "name": cell_name(v, i, plain),
                "key": cell_key::text(key),
                "norm": norm,
            })
        })
        .collect();
    let object = value
        .as_object_mut()
        .expect("a verdict serialises as an object");
    object.remove("norms");
    object.insert("cells".into(), Value::Array(cells));
    let (flagged, ok, not_judged) = counts(v);
    object.insert(
        "counts".into(),
        json!({"nodes": v.nodes.len(), "flagged": flagged, "ok": ok, "not_judged": not_judged}),
    );
    object.insert("summary".into(), summary(v).into());
    object.insert("method".into(), method(v).into());
    for (n, node) in v.nodes.iter().zip(value_nodes(object)) {
        node["status_words"] = status_words(n.status).into();
        node["reason"] = reasons(v, n, plain).join("; ").into();
        for (f, finding) in n.findings.iter().zip(array(&mut node["findings"])) {
            finding["cell_name"] = cell_name(v, f.cell, plain).into();
            finding["measure_words"] = measure_words(f.measure).into();
            finding["words"] = finding_words(v, f, plain).into();
        }
        for (c, compared) in n.compared.iter().zip(array(&mut node["compared"])) {
            compared["cell_name"] = cell_name(v, c.cell, plain).into();
            compared["measure_words"] = measure_words(c.measure).into();
        }
        for (u, unjudged) in n.not_judged.iter().zip(array(&mut node["not_judged"])) {
            unjudged["cell_name"] = cell_name(v, u.cell, plain).into();
            unjudged["words"] = not_judged_words(u.measure, &u.why).into();
        }
    }
    serde_json::to_string_pretty(&value)
}

/// The nodes of the serialised verdict.
fn value_nodes(object: &mut serde_json::Map<String, Value>) -> impl Iterator<Item = &mut Value> {
    object
        .get_mut("nodes")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

fn array(value: &mut Value) -> impl Iterator<Item = &mut Value> {
    value.as_array_mut().into_iter().flatten()
}
