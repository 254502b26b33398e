//! YAML documents as a tree that keeps each node's line, read with yaml-rust2's event parser
//! (the same library `k8s manifest` writes with). Every document of a stream (`---`) is one
//! tree. Aliases are kept as what they are (`*name`), never expanded, so a file of nested
//! aliases stays the size it is; nesting deeper than [`MAX_DEPTH`] is an error, not a stack.
//!
//! Merge keys are the one exception (`<<: *base`, `<<: [*a, *b]`), because compose files build
//! services from them: a service's `shm_size` or GPU reservation often comes from an `x-`
//! anchor. The anchored mapping's entries join the mapping that merges it, its own keys first
//! (YAML's merge rule), at the anchor's lines; what anchors and merges may copy is bounded by
//! [`MAX_MERGED`] nodes, past which the file is refused.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Deeper than any deployment file nests; a deeper one is refused.
pub(crate) const MAX_DEPTH: usize = 200;

/// Nodes anchored mappings and merge keys may copy in one stream: far more than a compose
/// file's anchors hold, far fewer than merges of merges, or anchors nested in anchors, multiply to.
pub(crate) const MAX_MERGED: usize = 100_000;

/// The key that merges a mapping into another.
const MERGE_KEY: &str = "<<";

/// One YAML node and the line (1-based) it starts on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) line: usize,
    pub(crate) value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// Keys in file order, each with the line of its key.
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
    /// A scalar as written (numbers and booleans too); an alias as `*`.
    Scalar(String),
}

/// A stream that is not YAML: the reason and the line.
#[derive(Debug, PartialEq)]
pub(crate) struct YamlError {
    pub(crate) line: usize,
    pub(crate) reason: String,
}

impl Node {
    /// The value at `key` of a mapping.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The node at a path of keys.
    pub(crate) fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }

    /// A scalar's text.
    pub(crate) fn text(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// A sequence's items (none for anything else).
    pub(crate) fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// A mapping's entries (none for anything else).
    pub(crate) fn entries(&self) -> &[(String, Node)] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }
}

/// A collection being built: its node, the key waiting for its value (maps), its anchor (0:
/// none) and the entries merge keys bring it.
struct Open {
    node: Node,
    key: Option<String>,
    anchor: usize,
    merged: Vec<(String, Node)>,
}

/// What is being built: the open collections, innermost last, and the anchored nodes so far.
#[derive(Default)]
struct Builder {
    docs: Vec<Node>,
    open: Vec<Open>,
    anchors: HashMap<usize, Node>,
    merged_nodes: usize,
    /// The first line of a refusal, and why.
    refused: Option<(usize, String)>,
}

/// Nodes in a tree.
fn size(node: &Node) -> usize {
    1 + match &node.value {
        Value::Map(entries) => entries.iter().map(|(_, v)| size(v)).sum(),
        Value::Seq(items) => items.iter().map(size).sum(),
        Value::Scalar(_) => 0,
    }
}

impl Builder {
    fn push(&mut self, node: Node, anchor: usize) {
        // Only mappings can be merged, so only they are kept, and what they copy is counted.
        if anchor > 0 && matches!(node.value, Value::Map(_)) {
            self.copied(size(&node), node.line);
            self.anchors.insert(anchor, node.clone());
        }
        match self.open.last_mut() {
            None => self.docs.push(node),
            Some(Open {
                node: parent, key, ..
            }) => match &mut parent.value {
                Value::Seq(items) => items.push(node),
                Value::Map(entries) => match key.take() {
                    Some(k) => entries.push((k, node)),
                    // A key: scalars as written; a collection as a key is rare and named.
                    None => {
                        *key = Some(match &node.value {
                            Value::Scalar(s) => s.clone(),
                            _ => "<complex key>".into(),
                        })
                    }
                },
                Value::Scalar(_) => {}
            },
        }
    }

    fn open(&mut self, value: Value, anchor: usize, mark: Marker) {
        if self.open.len() >= MAX_DEPTH {
            self.refuse(
                mark.line(),
                format!("nested deeper than {MAX_DEPTH} levels"),
            );
        }
        let node = Node {
            line: mark.line(),
            value,
        };
        self.open.push(Open {
            node,
            key: None,
            anchor,
            merged: Vec::new(),
        });
    }

    fn close(&mut self) {
        if let Some(Open {
            mut node,
            anchor,
            merged,
            ..
        }) = self.open.pop()
        {
            if let Value::Map(entries) = &mut node.value {
                for (k, v) in merged {
                    if !entries.iter().any(|(have, _)| *have == k) {
                        entries.push((k, v));
                    }
                }
            }
            self.push(node, anchor);
        }
    }

    /// Counts `nodes` copied for anchors and merges; false (and the stream refused) past
    /// [`MAX_MERGED`].
    fn copied(&mut self, nodes: usize, line: usize) -> bool {
        self.merged_nodes += nodes;
        if self.merged_nodes > MAX_MERGED {
            self.refuse(
                line,
                format!("anchors and merge keys (<<) copy more than {MAX_MERGED} nodes"),
            );
        }
        self.refused.is_none()
    }

    fn refuse(&mut self, line: usize, reason: String) {
        self.refused.get_or_insert((line, reason));
    }

    /// The mapping an alias at this point merges into: the innermost open mapping waiting for
    /// the value of `<<`, directly or as an item of its list.
    fn merging_into(&self) -> Option<usize> {
        let waiting = |i: usize| {
            matches!(self.open[i].node.value, Value::Map(_))
                && self.open[i].key.as_deref() == Some(MERGE_KEY)
        };
        let top = self.open.len().checked_sub(1)?;
        if waiting(top) {
            return Some(top);
        }
        let below = top.checked_sub(1)?;
        (matches!(self.open[top].node.value, Value::Seq(_)) && waiting(below)).then_some(below)
    }

    /// An alias: merged when it is a `<<` value, else kept as `*`.
    fn alias(&mut self, id: usize, mark: Marker) {
        let target = self.merging_into();
        if let (Some(at), Some(Value::Map(entries))) =
            (target, self.anchors.get(&id).map(|n| &n.value))
        {
            let copied: usize = entries.iter().map(|(_, v)| size(v) + 1).sum();
            let entries = entries.clone();
            if !self.copied(copied, mark.line()) {
                return;
            }
            self.open[at].merged.extend(entries);
        }
        self.push(
            Node {
                line: mark.line(),
                value: Value::Scalar("*".into()),
            },
            0,
        );
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.refused.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, _, anchor, _) => self.push(
                Node {
                    line: mark.line(),
                    value: Value::Scalar(text),
                },
                anchor,
            ),
            Event::Alias(id) => self.alias(id, mark),
            Event::SequenceStart(anchor, _) => self.open(Value::Seq(Vec::new()), anchor, mark),
            Event::MappingStart(anchor, _) => self.open(Value::Map(Vec::new()), anchor, mark),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            _ => {}
        }
    }
}

/// The documents of a YAML stream, each a tree; empty documents are left out.
pub(crate) fn documents(text: &str) -> Result<Vec<Node>, YamlError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut builder, true).map_err(|e| YamlError {
        line: e.marker().line(),
        reason: e.info().to_string(),
    })?;
    if let Some((line, reason)) = builder.refused {
        return Err(YamlError { line, reason });
    }
    Ok(builder
        .docs
        .into_iter()
        .filter(|d| !matches!(&d.value, Value::Scalar(s) if s.is_empty() || s == "~"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_their_lines() {
        let text = "a: 1\nb:\n  - x\n  - c: 2\n---\nkind: Pod\n";
        let docs = documents(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].at(&["a"]).unwrap().line, 1);
        let item = &docs[0].get("b").unwrap().items()[1];
        assert_eq!(item.get("c").unwrap().text(), Some("2"));
        assert_eq!(item.get("c").unwrap().line, 4);
        assert_eq!(docs[1].get("kind").unwrap().line, 6);
    }

    #[test]
    fn bad_yaml_and_deep_nesting_are_errors_with_a_line() {
        let bad = documents("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(bad.line >= 1, "{bad:?}");
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 5),
            "]".repeat(MAX_DEPTH + 5)
        );
        assert!(documents(&deep).unwrap_err().reason.contains("deeper"));
    }

    #[test]
    fn merge_keys_bring_the_anchor_s_entries_under_the_mapping_s_own() {
        let text = "x: &base\n  shm_size: 8gb\n  image: a\ny: &gpu\n  gpus: all\n\
                    s:\n  <<: *base\n  image: b\nt:\n  <<: [*base, *gpu]\n";
        let docs = documents(text).unwrap();
        let s = docs[0].get("s").unwrap();
        assert_eq!(s.get("shm_size").unwrap().text(), Some("8gb"));
        assert_eq!(s.get("shm_size").unwrap().line, 2);
        assert_eq!(s.get("image").unwrap().text(), Some("b"));
        let t = docs[0].get("t").unwrap();
        assert_eq!(t.get("gpus").unwrap().text(), Some("all"));
        assert_eq!(t.get("image").unwrap().text(), Some("a"));
    }

    #[test]
    fn merges_of_merges_are_bounded() {
        // Each level merges the one before twice over: 2^30 entries if copied without end.
        let mut text = String::from("l0: &l0 {a: 1, b: 2}\n");
        for i in 1..30 {
            text.push_str(&format!(
                "l{i}: &l{i} {{<<: [*l{p}], c{i}: {{<<: *l{p}}}}}\n",
                p = i - 1
            ));
        }
        let refused = documents(&text).unwrap_err();
        assert!(refused.reason.contains("merge keys"), "{refused:?}");
        // Anchors nested in anchors: each level's copy holds every level below it.
        let mut nested = String::new();
        for i in 0..150 {
            nested.push_str(&format!("{}a{i}: &a{i}\n", "  ".repeat(i)));
        }
        nested.push_str(&format!(
            "{}leaf: [{}]\n",
            "  ".repeat(150),
            "1, ".repeat(2000)
        ));
        assert!(documents(&nested).unwrap_err().reason.contains("anchors"));
    }

    #[test]
    fn aliases_are_not_expanded() {
        let text = "a: &x [1, 2]\nb: [*x, *x, *x]\n";
        let docs = documents(text).unwrap();
        assert_eq!(docs[0].get("b").unwrap().items().len(), 3);
        assert_eq!(docs[0].get("b").unwrap().items()[0].text(), Some("*"));
    }
}
