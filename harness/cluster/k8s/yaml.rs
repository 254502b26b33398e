//! JSON values as block-style YAML and back: what `k8s manifest` writes for people to review
//! (written here), and what `k8s collect --manifest` and a pod's `cell --from` read back
//! (through yaml-rust2, the library `check` reads deployment files with). Keys keep the order
//! people write Kubernetes objects in (`apiVersion`, `kind`, `metadata`, then the rest); strings
//! with line breaks are block literals; a string is bare only where every YAML reader, 1.1 or
//! 1.2, reads it back as that string, else double-quoted. Pure: text in, values out.

use serde_json::{Map, Number, Value};
use yaml_rust2::{ScanError, Yaml, YamlLoader};

/// Keys written first, in this order, where an object has them.
const FIRST_KEYS: [&str; 5] = ["apiVersion", "kind", "metadata", "name", "spec"];

/// Words YAML 1.1 readers (PyYAML, Go's yaml.v2) take as booleans or null, and YAML 1.2's core
/// schema as booleans or null: written bare, they would not come back as strings.
const RESERVED_WORDS: [&str; 26] = [
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~",
];

/// Whether `s` may be written as a plain scalar and still be read back as this string by every
/// YAML reader, 1.1 or 1.2. Deliberately narrow: a letter or '/' first (never a digit, sign or
/// dot, so no number of either version: `0b1`, `1_000`, `0o17`, `1:20`, `2024-01-01`, `.inf`),
/// then letters, digits, ' ', '.', '_', '/', '-' only, no trailing space, and not a reserved word.
/// Everything else is double-quoted.
fn is_plain(s: &str) -> bool {
    let first_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/');
    first_ok
        && !s.ends_with(' ')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '.' | '_' | '/' | '-'))
        && !RESERVED_WORDS.contains(&s)
}

/// Whether YAML lets `c` stand as itself in a scalar (its printable set, less the characters
/// YAML 1.1 takes as line breaks, NEL, LS and PS, and the byte order mark).
fn is_printable(c: char) -> bool {
    matches!(c as u32, 0x20..=0x7e | 0xa0..=0xd7ff | 0xe000..=0xfffd | 0x10000..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// `s` as a double-quoted scalar: `\\` and `"` escaped, and every character YAML does not let
/// stand as itself as `\\uXXXX`, so no character of it can end the line.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if !is_printable(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `s` reads back the same as a literal block (`|`, `|-`): lines of printable text, the
/// first not indented (it would set the block's indentation), at most one final line break.
fn is_literal_block(s: &str) -> bool {
    s.contains('\n')
        && !s.ends_with("\n\n")
        && !s.starts_with([' ', '\n'])
        && s.chars().all(|c| c == '\n' || is_printable(c))
        && s.lines().all(|l| l.trim_end() == l)
}

/// Block-style YAML, written here rather than by yaml-rust2's emitter so that what is quoted is
/// this module's decision: yaml-rust2 leaves `0b1` and `1_000` bare, which YAML 1.1 readers
/// (kubectl's and client-go's yaml.v2 lineage, PyYAML) read as the integers 1 and 1000.
struct Emitter<'a> {
    out: String,
    /// Keys whose string values (at any depth) are always double-quoted.
    always_quoted: &'a [&'a str],
}

impl Emitter<'_> {
    fn pad(&mut self, indent: usize) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    fn scalar(&mut self, value: &Value, indent: usize, quote: bool) {
        let text = match value {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            Value::String(s) if quote => quoted(s),
            Value::String(s) if is_plain(s) => s.clone(),
            Value::String(s) if is_literal_block(s) => {
                self.out
                    .push_str(if s.ends_with('\n') { "|" } else { "|-" });
                for line in s.lines() {
                    match line.is_empty() {
                        true => self.out.push('\n'),
                        false => {
                            self.pad(indent + 2);
                            self.out.push_str(line);
                        }
                    }
                }
                return;
            }
            Value::String(s) => quoted(s),
            // Collections are written by `map` and `seq`; an empty one is its flow form.
            Value::Array(_) => "[]".to_string(),
            Value::Object(_) => "{}".to_string(),
        };
        self.out.push_str(&text);
    }

    /// A mapping's entries at `indent`; the first on the current line when `inline`.
    fn map(&mut self, map: &Map<String, Value>, indent: usize, inline: bool, quote: bool) {
        let first = FIRST_KEYS.iter().filter_map(|k| map.get_key_value(*k));
        let rest = map
            .iter()
            .filter(|(k, _)| !FIRST_KEYS.contains(&k.as_str()));
        for (i, (key, value)) in first.chain(rest).enumerate() {
            if i > 0 || !inline {
                self.pad(indent);
            }
            self.out.push_str(&match is_plain(key) {
                true => key.clone(),
                false => quoted(key),
            });
            self.out.push(':');
            let quote = quote || self.always_quoted.contains(&key.as_str());
            self.nested(value, indent, false, quote);
        }
    }

    /// A sequence's items at `indent`; the first on the current line when `inline`.
    fn seq(&mut self, items: &[Value], indent: usize, inline: bool, quote: bool) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !inline {
                self.pad(indent);
            }
            self.out.push('-');
            self.nested(item, indent, true, quote);
        }
    }

    /// A value after `key:` or `-` at column `indent`: a collection's entries at `indent + 2`
    /// (on the following lines after a key, from the same line after a dash), a scalar after a
    /// space.
    fn nested(&mut self, value: &Value, indent: usize, item: bool, quote: bool) {
        match value {
            Value::Object(m) if !m.is_empty() => {
                if item {
                    self.out.push(' ');
                }
                self.map(m, indent + 2, item, quote);
            }
            Value::Array(a) if !a.is_empty() => {
                if item {
                    self.out.push(' ');
                }
                self.seq(a, indent + 2, item, quote);
            }
            _ => {
                self.out.push(' ');
                self.scalar(value, indent, quote);
            }
        }
    }
}

/// Documents as one YAML stream, each starting with `---`.
pub fn to_yaml(values: &[Value]) -> String {
    to_yaml_quoting(values, &[])
}

/// Documents as one YAML stream, each starting with `---`, every string value under a key named
/// in `always_quoted` double-quoted whatever it looks like (a Kubernetes label value is a
/// string, and a reader should never have to know which strings look like numbers).
pub(crate) fn to_yaml_quoting(values: &[Value], always_quoted: &[&str]) -> String {
    let mut e = Emitter {
        out: String::new(),
        always_quoted,
    };
    for value in values {
        e.out.push_str("---");
        match value {
            Value::Object(m) if !m.is_empty() => e.map(m, 0, false, false),
            Value::Array(a) if !a.is_empty() => e.seq(a, 0, false, false),
            _ => {
                e.out.push(' ');
                e.scalar(value, 0, false);
            }
        }
        e.out.push('\n');
    }
    e.out
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

/// Why a text is not a YAML (or JSON) stream, in the reader's words: what it met and where
/// (`did not find expected key at byte 40 line 3 column 5`), for the caller to say which file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct NotYaml(#[from] ScanError);

/// The documents of a YAML (or JSON) stream as JSON values; why not, where it is not YAML.
pub fn from_yaml(text: &str) -> Result<Vec<Value>, NotYaml> {
    let docs = YamlLoader::load_from_str(text)?;
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

    #[test]
    fn strings_that_yaml_1_1_reads_as_other_things_are_quoted_and_come_back() {
        let tricky = [
            "0b1",
            "1_000",
            "0o17",
            "017",
            "0x1f",
            "1:20",
            "2024-01-01",
            ".inf",
            "-.5",
            "+1",
            "1e3",
            "on",
            "No",
            "~",
            "",
            " lead",
            "trail ",
            "a: b",
            "#x",
            "<<",
            "=",
            "a\nb\n",
            "\ttab",
            "nul\u{0}",
            "line\u{2028}sep",
            "quote\"back\\",
            "- item",
            "{a}",
            "*ref",
        ];
        let value = json!({"s": tricky, "y": "n", "nodeSelector": {"pool": "a100"}});
        let text = to_yaml_quoting(std::slice::from_ref(&value), &["nodeSelector"]);
        for bare in ["0b1", "1_000", "0o17", "2024-01-01", "on", "~"] {
            assert!(text.contains(&format!("- \"{bare}\"\n")), "{bare}: {text}");
        }
        assert!(
            text.contains("\"y\": \"n\""),
            "a YAML 1.1 boolean key: {text}"
        );
        assert!(text.contains("pool: \"a100\""), "always quoted: {text}");
        assert!(text.lines().all(|l| !l.contains('\u{2028}')), "{text}");
        assert_eq!(from_yaml(&text).unwrap(), vec![value]);
    }

    #[test]
    fn text_that_is_not_yaml_says_where_the_reader_stopped() {
        let e = from_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        let words = e.to_string();
        assert!(
            words.contains(" line ") && words.contains(" column "),
            "{words}"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_strings_come_back_as_they_went(key in ".*", value in ".*", item in "[\t -~\n\u{85}\u{2028}]*") {
            let doc = json!({"m": {key.clone(): value}, "l": [item, {"k": key}]});
            let text = to_yaml(std::slice::from_ref(&doc));
            proptest::prop_assert_eq!(from_yaml(&text).unwrap(), vec![doc], "{}", text);
        }
    }
}
