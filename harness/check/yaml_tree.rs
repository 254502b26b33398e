//! A YAML document as a tree that keeps each node's line: mappings in file order, sequences,
//! scalars as written, and anchored nodes shared with their aliases (`Rc`, never copied). The
//! accessors read through an anchor or alias to the node it shares, so rules read an alias
//! (`volumeMounts: *mounts`) as what it names, one step each, never expanding a tree.

use std::rc::Rc;

/// Deeper than any deployment file nests; a deeper one is refused.
pub const MAX_DEPTH: usize = 200;

/// Nodes merge keys may copy in one stream: far more than a compose file's anchors hold, far
/// fewer than merges of merges multiply to.
pub const MAX_MERGED: usize = 100_000;

/// One YAML node and the line (1-based) it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub line: usize,
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Keys in file order, each with the line of its key.
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
    /// A scalar as written (numbers and booleans too); an alias of no finished anchor as `*`.
    Scalar(String),
    /// A node with an anchor (`&name`), shared with the aliases that name it.
    Anchored(Rc<Node>),
    /// An alias (`*name`): the anchored node itself, shared, never copied.
    Alias(Rc<Node>),
}

impl Node {
    /// The node itself, or the one an anchor or alias shares (anchors cannot name aliases, so
    /// one step reaches it).
    pub fn resolved(&self) -> &Node {
        match &self.value {
            Value::Anchored(node) | Value::Alias(node) => node,
            _ => self,
        }
    }

    /// The value at `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.resolved().value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The node at a path of keys.
    pub fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }

    /// A scalar's text.
    pub fn text(&self) -> Option<&str> {
        match &self.resolved().value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// A sequence's items (none for anything else).
    pub fn items(&self) -> &[Node] {
        match &self.resolved().value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// A mapping's entries (none for anything else).
    pub fn entries(&self) -> &[(String, Node)] {
        match &self.resolved().value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    /// A boolean as Kubernetes reads it: YAML 1.1's words (`True`, `yes`, `on`...), since
    /// kubectl and the API server parse YAML with go-yaml v2 (through sigs.k8s.io/yaml).
    pub fn yaml11_bool(&self) -> Option<bool> {
        match self.text()? {
            "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
                Some(true)
            }
            "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off"
            | "OFF" => Some(false),
            _ => None,
        }
    }
}
