//! YAML documents as a tree that keeps each node's line, read with yaml-rust2's event parser
//! (the same library `k8s manifest` writes with). Every document of a stream (`---`) is one
//! tree, parsed apart from the others: a broken document is an error of its own, and the
//! documents around it are still trees. `yaml_events` builds a tree from the events, of the
//! nodes `yaml_tree` defines.
//!
//! Bounded before anything recursive sees the text: the events are pulled one at a time here
//! (yaml-rust2's own `load` recurses once per level and overflows the stack on a file of
//! 25,000 `- ` or `[`), and the pull stops at the first collection deeper than
//! `MAX_DEPTH`, aliases' depth included. Anchored nodes and aliases share one node (never
//! copied, so a file of nested aliases stays the size it is); merge keys copy, bounded by
//! `MAX_MERGED`.

use yaml_rust2::parser::{Event, Parser};

use super::yaml_events::Builder;
use super::yaml_tree::{Node, Value};

/// A document that is not YAML (or is refused): the reason and the line.
#[derive(Debug, PartialEq)]
pub struct YamlError {
    pub line: usize,
    pub reason: String,
}

/// A stream's documents: the trees, and an error for each document that is not one.
#[derive(Debug, Default)]
pub struct Parsed {
    pub docs: Vec<Node>,
    pub errors: Vec<YamlError>,
}

/// Whether a line is a document marker (`---` or `...` at its start, then a space or nothing).
fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// The stream cut at its document markers, each part with its first line. YAML forbids a
/// marker at a line's start inside any scalar, so the cuts are where the documents are; a part
/// of only comments and directives stays with the document after it.
fn parts(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut start, mut start_line, mut content, mut offset) = (0, 1, false, 0);
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        if is_marker(bare, "---") && content {
            out.push((start_line, &text[start..offset]));
            (start, start_line) = (offset, n + 1);
        }
        offset += line.len();
        let trimmed = bare.trim_start();
        content |= !(trimmed.is_empty() || trimmed.starts_with('#') || bare.starts_with('%'));
        if is_marker(bare, "...") {
            out.push((start_line, &text[start..offset]));
            (start, start_line, content) = (offset, n + 2, false);
        }
    }
    if start < text.len() {
        out.push((start_line, &text[start..]));
    }
    out
}

/// One part's documents, the events pulled one at a time and the pull stopped at a refusal.
fn part_documents(text: &str, builder: &mut Builder) -> Result<(), YamlError> {
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser.next_token().map_err(|e| YamlError {
            line: builder.line(e.marker().line()),
            reason: e.info().to_string(),
        })?;
        if event == Event::StreamEnd {
            return Ok(());
        }
        builder.on_event(event, mark);
        if let Some((line, reason)) = builder.refused.take() {
            return Err(YamlError { line, reason });
        }
    }
}

/// The documents of a YAML stream, each a tree; empty documents are left out. A document that
/// is not YAML, or is refused, is an error of its own.
pub fn documents(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut copied = 0;
    for (first_line, part) in parts(text) {
        let mut builder = Builder::new(first_line - 1, copied);
        let result = part_documents(part, &mut builder);
        copied = builder.copied;
        match result {
            Ok(()) => parsed.docs.extend(
                builder
                    .docs
                    .into_iter()
                    .filter(|d| !matches!(&d.value, Value::Scalar(s) if s.is_empty() || s == "~")),
            ),
            Err(e) => parsed.errors.push(e),
        }
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::super::yaml_tree::MAX_DEPTH;
    use super::*;

    fn docs(text: &str) -> Vec<Node> {
        let parsed = documents(text);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        parsed.docs
    }

    fn error(text: &str) -> YamlError {
        documents(text).errors.into_iter().next().expect("an error")
    }

    #[test]
    fn documents_keep_their_lines() {
        let text = "a: 1\nb:\n  - x\n  - c: 2\n---\nkind: Pod\n";
        let docs = docs(text);
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].at(&["a"]).unwrap().line, 1);
        let item = &docs[0].get("b").unwrap().items()[1];
        assert_eq!(item.get("c").unwrap().text(), Some("2"));
        assert_eq!(item.get("c").unwrap().line, 4);
        assert_eq!(docs[1].get("kind").unwrap().line, 6);
    }

    #[test]
    fn a_broken_document_costs_only_itself() {
        let text = "# head\n%YAML 1.2\n---\na: 1\n---\nb: [1, 2\nc: 3\n---\nd: 4\n...\ne: 5\n";
        let parsed = documents(text);
        let keys: Vec<&str> = parsed
            .docs
            .iter()
            .map(|d| d.entries()[0].0.as_str())
            .collect();
        assert_eq!(keys, ["a", "d", "e"], "{parsed:?}");
        assert_eq!(parsed.errors.len(), 1, "{parsed:?}");
        assert!((6..=8).contains(&parsed.errors[0].line), "{parsed:?}");
        assert_eq!(parsed.docs[2].get("e").unwrap().line, 11);
    }

    #[test]
    fn bad_yaml_and_deep_nesting_are_errors_with_a_line() {
        let bad = error("a: [1, 2\nb: 3\n");
        assert!(bad.line >= 1, "{bad:?}");
        // Far deeper than yaml-rust2's recursive loader survives: refused at the bound (flow
        // collections by its scanner's own, at 255 levels of a flow, if it comes first).
        let flow = format!("{}1{}", "[".repeat(25_000), "]".repeat(25_000));
        let refused = error(&flow);
        assert!(
            refused.reason.contains("deeper") || refused.reason.contains("recursion limit"),
            "{refused:?}"
        );
        let block = error(&format!("{}x\n", "- ".repeat(25_000)));
        assert!(block.reason.contains("deeper than 200"), "{block:?}");
    }

    #[test]
    fn aliases_share_their_anchor_and_count_in_depth() {
        let text = "a: &x {k: [1, 2]}\nb: [*x, *x, *x]\nc: &t True\nd: *t\n";
        let docs = docs(text);
        let b = docs[0].get("b").unwrap();
        assert_eq!(b.items().len(), 3);
        assert_eq!(b.items()[0].get("k").unwrap().items().len(), 2);
        assert_eq!(docs[0].get("d").unwrap().yaml11_bool(), Some(true));
        // Each anchor one level deeper through the alias: refused when the whole is too deep.
        let mut chain = String::from("a0: &a0 [1]\n");
        for i in 1..=MAX_DEPTH {
            chain.push_str(&format!("a{i}: &a{i} [*a{}]\n", i - 1));
        }
        assert!(error(&chain).reason.contains("deeper"));
    }

    #[test]
    fn yaml_1_1_booleans_read_as_kubernetes_reads_them() {
        let docs = docs("a: yes\nb: On\nc: \"maybe\"\nd: FALSE\n");
        let b = |k: &str| docs[0].get(k).unwrap().yaml11_bool();
        assert_eq!(
            (b("a"), b("b"), b("c"), b("d")),
            (Some(true), Some(true), None, Some(false))
        );
    }

    #[test]
    fn merge_keys_bring_the_anchor_s_entries_under_the_mapping_s_own() {
        let text = "x: &base\n  shm_size: 8gb\n  image: a\ny: &gpu\n  gpus: all\n\
                    s:\n  <<: *base\n  image: b\nt:\n  <<: [*base, *gpu]\n";
        let docs = documents(text).docs;
        let s = docs[0].get("s").unwrap();
        assert_eq!(s.get("shm_size").unwrap().text(), Some("8gb"));
        assert_eq!(s.get("shm_size").unwrap().line, 2);
        assert_eq!(s.get("image").unwrap().text(), Some("b"));
        let t = docs[0].get("t").unwrap();
        assert_eq!(t.get("gpus").unwrap().text(), Some("all"));
        assert_eq!(t.get("image").unwrap().text(), Some("a"));
    }

    #[test]
    fn merges_of_merges_are_bounded_and_nested_anchors_shared() {
        // Each level merges the one before twice over: 2^30 entries if copied without end.
        let mut text = String::from("l0: &l0 {a: 1, b: 2}\n");
        for i in 1..30 {
            text.push_str(&format!(
                "l{i}: &l{i} {{<<: [*l{p}], c{i}: {{<<: *l{p}}}}}\n",
                p = i - 1
            ));
        }
        let refused = error(&text);
        assert!(refused.reason.contains("merge keys"), "{refused:?}");
        // Anchors nested in anchors: shared, so the tree is the size of the text.
        let mut nested = String::new();
        for i in 0..150 {
            nested.push_str(&format!("{}a{i}: &a{i}\n", "  ".repeat(i)));
        }
        nested.push_str(&format!(
            "{}leaf: [{}]\n",
            "  ".repeat(150),
            "1, ".repeat(2000)
        ));
        let parsed = documents(&nested);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        // A billion aliases' worth, nine levels of nine: nine nodes each, none copied.
        let mut laughs = String::from("a0: &a0 [x]\n");
        for i in 1..10 {
            laughs.push_str(&format!(
                "a{i}: &a{i} [{}]\n",
                format!("*a{}, ", i - 1).repeat(9)
            ));
        }
        let docs = documents(&laughs).docs;
        assert_eq!(docs[0].get("a9").unwrap().items().len(), 9);
    }
}
