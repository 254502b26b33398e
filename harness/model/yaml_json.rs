//! JSON values as block-style YAML and back, through yaml-rust2 (the library `check` reads
//! deployment files with): what `k8s manifest` writes for people to review, and what
//! `k8s collect --manifest` and a pod's `cell --from` read back. Keys keep the order people
//! write Kubernetes objects in (`apiVersion`, `kind`, `metadata`, then the rest); strings with
//! line breaks are block literals. Pure: text in, values out.

use serde_json::{Map, Number, Value};
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

/// Keys written first, in this order, where an object has them.
const FIRST_KEYS: [&str; 5] = ["apiVersion", "kind", "metadata", "name", "spec"];

fn to_node(value: &Value) -> Yaml {
    match value {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(items) => Yaml::Array(items.iter().map(to_node).collect()),
        Value::Object(map) => {
            let mut hash = Hash::new();
            let first = FIRST_KEYS.iter().filter_map(|k| map.get_key_value(*k));
            let rest = map
                .iter()
                .filter(|(k, _)| !FIRST_KEYS.contains(&k.as_str()));
            for (k, v) in first.chain(rest) {
                hash.insert(Yaml::String(k.clone()), to_node(v));
            }
            Yaml::Hash(hash)
        }
    }
}

/// Documents as one YAML stream, each starting with `---`.
pub fn to_yaml(values: &[Value]) -> String {
    let mut out = String::new();
    for value in values {
        let mut text = String::new();
        let mut emitter = YamlEmitter::new(&mut text);
        emitter.multiline_strings(true);
        // Writing into a String cannot fail.
        let _ = emitter.dump(&to_node(value));
        out.push_str(&text);
        out.push('\n');
    }
    out
}

fn to_value(node: &Yaml) -> Value {
    match node {
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or_else(|| Value::String(r.clone()), Value::Number),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            for (k, v) in hash {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    other => match to_value(other) {
                        Value::String(s) => s,
                        v => v.to_string(),
                    },
                };
                map.insert(key, to_value(v));
            }
            Value::Object(map)
        }
        Yaml::Null | Yaml::Alias(_) | Yaml::BadValue => Value::Null,
    }
}

/// The documents of a YAML (or JSON) stream as JSON values; why not, where it is not YAML.
pub fn from_yaml(text: &str) -> Result<Vec<Value>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    Ok(docs.iter().map(to_value).collect())
}

/// The first document of a YAML (or JSON) stream, if it is YAML and has one.
pub fn first_document(text: &str) -> Option<Value> {
    from_yaml(text).ok()?.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_go_to_yaml_and_come_back_the_same() {
        let value = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "data": {"cells.yaml": "- a: 1\n  b: true\n", "n": "1"},
            "list": [1, 2.5, null, "true", "x: y"],
        });
        let text = to_yaml(std::slice::from_ref(&value));
        assert!(
            text.starts_with("---\napiVersion: v1\nkind: ConfigMap\n"),
            "{text}"
        );
        assert!(text.contains("cells.yaml: |"), "a block literal: {text}");
        assert_eq!(from_yaml(&text).unwrap(), vec![value]);
    }
}
