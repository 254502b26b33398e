//! YAML documents as a tree that keeps each node's line, read with yaml-rust2's event parser
//! (the same library `k8s manifest` writes with). Every document of a stream (`---`) is one
//! tree. Aliases are kept as what they are (`*name`), never expanded, so a file of nested
//! aliases stays the size it is; nesting deeper than [`MAX_DEPTH`] is an error, not a stack.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Deeper than any deployment file nests; a deeper one is refused.
pub(crate) const MAX_DEPTH: usize = 200;

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

/// What is being built: the open collections, innermost last, with their pending key.
#[derive(Default)]
struct Builder {
    docs: Vec<Node>,
    open: Vec<(Node, Option<String>)>,
    too_deep: Option<usize>,
}

impl Builder {
    fn push(&mut self, node: Node) {
        match self.open.last_mut() {
            None => self.docs.push(node),
            Some((parent, key)) => match &mut parent.value {
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

    fn open(&mut self, value: Value, mark: Marker) {
        if self.open.len() >= MAX_DEPTH {
            self.too_deep.get_or_insert(mark.line());
        }
        let node = Node {
            line: mark.line(),
            value,
        };
        self.open.push((node, None));
    }

    fn close(&mut self) {
        if let Some((node, _)) = self.open.pop() {
            self.push(node);
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.too_deep.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, ..) => self.push(Node {
                line: mark.line(),
                value: Value::Scalar(text),
            }),
            Event::Alias(_) => self.push(Node {
                line: mark.line(),
                value: Value::Scalar("*".into()),
            }),
            Event::SequenceStart(..) => self.open(Value::Seq(Vec::new()), mark),
            Event::MappingStart(..) => self.open(Value::Map(Vec::new()), mark),
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
    if let Some(line) = builder.too_deep {
        return Err(YamlError {
            line,
            reason: format!("nested deeper than {MAX_DEPTH} levels"),
        });
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
    fn aliases_are_not_expanded() {
        let text = "a: &x [1, 2]\nb: [*x, *x, *x]\n";
        let docs = documents(text).unwrap();
        assert_eq!(docs[0].get("b").unwrap().items().len(), 3);
        assert_eq!(docs[0].get("b").unwrap().items()[0].text(), Some("*"));
    }
}
