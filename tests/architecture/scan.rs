//! Reading imports from Rust source without a parser: comments and literals blanked, a small
//! tokenizer, `use` brace groups expanded, inline modules tracked so `super::` resolves as rustc
//! resolves it, and each path resolved to the module file that defines it.

use std::collections::BTreeSet;

/// Source with comments, string and char literals blanked (newlines kept, for line numbers).
pub fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_char_before(&b, i)
        {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1f}') or a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path, // ::
    Open,
    Close,
    Comma,
    Star,
    Other,
}

fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_alphabetic() || c == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push((Tok::Ident(chars[start..i].iter().collect()), n + 1));
                continue;
            }
            let tok = match c {
                ':' if chars.get(i + 1) == Some(&':') => {
                    i += 1;
                    Tok::Path
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                c if c.is_whitespace() => {
                    i += 1;
                    continue;
                }
                _ => Tok::Other,
            };
            out.push((tok, n + 1));
            i += 1;
        }
    }
    out
}

/// Expands the path starting at `toks[i]` (after its first segment) into full segment lists;
/// returns them and the index after the path.
fn expand(toks: &[(Tok, usize)], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        if toks.get(i).map(|t| &t.0) != Some(&Tok::Path) {
            return (vec![path], i);
        }
        i += 1;
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(name)) => {
                path.push(name.clone());
                i += 1;
            }
            Some(Tok::Star) => return (vec![path], i + 1),
            Some(Tok::Open) => {
                i += 1;
                let mut all = Vec::new();
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Close) | None => return (all, i + 1),
                        Some(Tok::Comma) => i += 1,
                        Some(Tok::Star) => {
                            all.push(path.clone());
                            i += 1;
                        }
                        Some(Tok::Ident(name)) => {
                            let mut sub = path.clone();
                            if name != "self" {
                                sub.push(name.clone());
                            }
                            let (paths, next) = expand(toks, i + 1, sub);
                            all.extend(paths);
                            i = next;
                            // `as alias`
                            if matches!(toks.get(i).map(|t| &t.0), Some(Tok::Ident(a)) if a == "as")
                            {
                                i += 2;
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            _ => return (vec![path], i),
        }
    }
}

/// One import of one file: the module it names, the line, and the path as written.
#[derive(Debug)]
pub struct Import {
    pub target: Vec<String>,
    pub line: usize,
    pub written: String,
}

/// The imports of the file for module `module` within its crate (rooted at the module
/// `crate_root`), resolved against the modules in `known`. Paths through another crate (a layer
/// below, by its dependency name) are Cargo's to check, not an edge here.
pub fn imports(
    module: &[String],
    crate_root: &[String],
    src: &str,
    known: &BTreeSet<Vec<String>>,
) -> Vec<Import> {
    let toks = tokens(&code_only(src));
    let mut out = Vec::new();
    // Inline modules (`mod tests { ... }`): (name, brace depth at which it closes).
    let mut scopes: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        match tok {
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Open, _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    scopes.push((name.clone(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                while scopes.last().is_some_and(|(_, d)| *d == depth) {
                    scopes.pop();
                }
            }
            Tok::Ident(head)
                if (head == "crate" || head == "super" || head == "self")
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path)
                    && !(i > 0 && toks[i - 1].0 == Tok::Path) =>
            {
                let here: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(scopes.iter().map(|(n, _)| n.clone()))
                    .collect();
                let (paths, next) = expand(&toks, i + 1, vec![head.clone()]);
                for p in paths {
                    let mut base: Vec<String> = match p[0].as_str() {
                        "crate" => crate_root.to_vec(),
                        "self" => here.clone(),
                        _ => {
                            let mut b = here.clone();
                            b.pop();
                            b
                        }
                    };
                    let mut rest = p[1..].iter().peekable();
                    while rest.peek().is_some_and(|s| *s == "super") {
                        base.pop();
                        rest.next();
                    }
                    let full: Vec<String> = base.into_iter().chain(rest.cloned()).collect();
                    let target = (0..=full.len())
                        .rev()
                        .map(|n| full[..n].to_vec())
                        .find(|m| known.contains(m))
                        .unwrap_or_default();
                    if target.as_slice() != module && !target.is_empty() {
                        out.push(Import {
                            target,
                            line: *line,
                            written: p.join("::"),
                        });
                    }
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}
