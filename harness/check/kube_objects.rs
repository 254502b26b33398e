//! What a Kubernetes document holds: whether it is an object at all, and its objects (a List's
//! items, or the one object), for the checks of pods and of the runtime classes they name.

use super::yaml_tree::Node;

/// The objects of a document: a List's items, or the one object.
pub fn objects(doc: &Node) -> Vec<&Node> {
    match doc.get("kind").and_then(Node::text) {
        Some(kind) if kind.ends_with("List") => doc
            .get("items")
            .map(|i| i.items().iter().collect())
            .unwrap_or_default(),
        Some(_) => vec![doc],
        None => Vec::new(),
    }
}

/// Whether a document is a Kubernetes object (or a List of them).
pub fn is_kubernetes(doc: &Node) -> bool {
    doc.get("kind").is_some() && doc.get("apiVersion").is_some()
}
