//! A YAML tree built from yaml-rust2's events, one event at a time, with each node's line.
//! Anchored nodes are kept once, shared (`Rc`) by the aliases that name them, so nothing is
//! copied for an alias however they nest; the depth bound counts an alias as the levels its
//! anchor holds, so no tree read through aliases is deeper than [`MAX_DEPTH`].
//!
//! Merge keys are the one copy (`<<: *base`, `<<: [*a, *b]`), because compose files build
//! services from them: a service's `shm_size` or GPU reservation often comes from an `x-`
//! anchor. The anchored mapping's entries join the mapping that merges it, its own keys first
//! (YAML's merge rule), at the anchor's lines, through a set of the keys it has (a merge into
//! a mapping of a million keys is linear); what merges copy is bounded by [`MAX_MERGED`]
//! nodes in the whole stream, past which the document is refused.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use yaml_rust2::parser::Event;
use yaml_rust2::scanner::Marker;

use super::yaml_tree::{Node, Value, MAX_DEPTH, MAX_MERGED};

/// The key that merges a mapping into another.
const MERGE_KEY: &str = "<<";

/// A collection being built: its node, the key waiting for its value (maps), its anchor (0:
/// none), the entries merge keys bring it, and the levels below it so far.
struct Open {
    node: Node,
    key: Option<String>,
    anchor: usize,
    merged: Vec<(String, Node)>,
    below: usize,
}

/// What is being built: the open collections, innermost last, and the anchored nodes so far.
pub(super) struct Builder {
    pub(super) docs: Vec<Node>,
    open: Vec<Open>,
    /// Each anchored node, with the levels of collections it holds (through its aliases).
    anchors: HashMap<usize, (Rc<Node>, usize)>,
    /// Nodes merge keys copied, in this part and the stream's parts before it.
    pub(super) copied: usize,
    /// The first line of a refusal, and why.
    pub(super) refused: Option<(usize, String)>,
    /// Lines before this part of the stream.
    offset: usize,
}

/// Nodes a copy of a tree makes (an anchor or alias is one: copying it shares it).
fn size(node: &Node) -> usize {
    1 + match &node.value {
        Value::Map(entries) => entries.iter().map(|(_, v)| size(v)).sum(),
        Value::Seq(items) => items.iter().map(size).sum(),
        Value::Scalar(_) | Value::Anchored(_) | Value::Alias(_) => 0,
    }
}

impl Builder {
    pub(super) fn new(offset: usize, copied: usize) -> Builder {
        Builder {
            docs: Vec::new(),
            open: Vec::new(),
            anchors: HashMap::new(),
            copied,
            refused: None,
            offset,
        }
    }

    /// The stream's line of a line of this part.
    pub(super) fn line(&self, line: usize) -> usize {
        line + self.offset
    }

    /// Puts a finished node in its parent (or as a document); `height` is the levels of
    /// collections it holds.
    fn push(&mut self, node: Node, anchor: usize, height: usize) {
        let node = match anchor {
            0 => node,
            _ => {
                let shared = Rc::new(node);
                self.anchors.insert(anchor, (Rc::clone(&shared), height));
                Node {
                    line: shared.line,
                    value: Value::Anchored(shared),
                }
            }
        };
        let Some(parent) = self.open.last_mut() else {
            return self.docs.push(node);
        };
        parent.below = parent.below.max(height);
        match &mut parent.node.value {
            Value::Seq(items) => items.push(node),
            Value::Map(entries) => match parent.key.take() {
                Some(k) => entries.push((k, node)),
                // A key: scalars as written; a collection as a key is rare and named.
                None => parent.key = Some(node.text().unwrap_or("<complex key>").to_string()),
            },
            _ => {}
        }
    }

    fn open(&mut self, value: Value, anchor: usize, mark: Marker) {
        let line = self.line(mark.line());
        if self.open.len() >= MAX_DEPTH {
            return self.refuse(line, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        self.open.push(Open {
            node: Node { line, value },
            key: None,
            anchor,
            merged: Vec::new(),
            below: 0,
        });
    }

    fn close(&mut self) {
        let Some(Open {
            mut node,
            anchor,
            merged,
            below,
            ..
        }) = self.open.pop()
        else {
            return;
        };
        if let Value::Map(entries) = &mut node.value {
            if !merged.is_empty() {
                let mut have: HashSet<String> = entries.iter().map(|(k, _)| k.clone()).collect();
                for (k, v) in merged {
                    if have.insert(k.clone()) {
                        entries.push((k, v));
                    }
                }
            }
        }
        self.push(node, anchor, below + 1);
    }

    /// Counts `nodes` copied by merges; false (and the document refused) past [`MAX_MERGED`].
    fn copied(&mut self, nodes: usize, line: usize) -> bool {
        self.copied += nodes;
        if self.copied > MAX_MERGED {
            self.refuse(
                line,
                format!("merge keys (<<) copy more than {MAX_MERGED} nodes"),
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

    /// An alias: the anchored node shared (and its entries copied when it is a `<<` value).
    fn alias(&mut self, id: usize, mark: Marker) {
        let line = self.line(mark.line());
        let Some((target, height)) = self.anchors.get(&id).cloned() else {
            // An anchor still open (an alias inside its own anchor): kept as what it is.
            let star = Value::Scalar("*".into());
            return self.push(Node { line, value: star }, 0, 0);
        };
        if self.open.len() + height > MAX_DEPTH {
            return self.refuse(
                line,
                format!("nested deeper than {MAX_DEPTH} levels through aliases"),
            );
        }
        if let (Some(at), Value::Map(entries)) = (self.merging_into(), &target.value) {
            let copied: usize = entries.iter().map(|(_, v)| size(v) + 1).sum();
            if !self.copied(copied, line) {
                return;
            }
            self.open[at].merged.extend(entries.iter().cloned());
        }
        let value = Value::Alias(target);
        self.push(Node { line, value }, 0, height);
    }

    pub(super) fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, _, anchor, _) => {
                let line = self.line(mark.line());
                let value = Value::Scalar(text);
                self.push(Node { line, value }, anchor, 0);
            }
            Event::Alias(id) => self.alias(id, mark),
            Event::SequenceStart(anchor, _) => self.open(Value::Seq(Vec::new()), anchor, mark),
            Event::MappingStart(anchor, _) => self.open(Value::Map(Vec::new()), anchor, mark),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            _ => {}
        }
    }
}
