//! No two files of a crate import each other, directly or around a circle: each crate's
//! modules form a layered graph, so that one can be read, changed or moved without the
//! others. An edge is a `crate::` or `super::` path in a module's code (comments and the
//! in-file `mod tests` left out) naming another module of the same crate; a parent's own
//! items reached as `super::{..}` do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

const CRATES: [&str; 11] =
    ["simd", "core", "store", "proto", "server", "misbehave", "client", "gateway", "bench", "cli", "testkit"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are module `[a, b]`; `lib.rs` and `main.rs` the root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file without its comments and its `#[cfg(test)] mod tests { .. }`.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
    text.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Each `crate::a::b` and `super::a` path in `code`, as its segments.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (at, _) in code.match_indices(start) {
            if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let path: String =
                code[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            out.push(path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect());
        }
    }
    out
}

fn edges(krate: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let src = krate.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &modules {
        for path in paths(&code(&std::fs::read_to_string(file).unwrap())) {
            let (mut base, mut rest) = match path[0].as_str() {
                "crate" => (Vec::new(), &path[1..]),
                _ => (module.clone(), &path[..]),
            };
            // `super` of module `a::b` is `a`, whether it is `a/b.rs` or `a/b/mod.rs`.
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            // The deepest module the path names; a parent's own items are not an edge.
            let target =
                (1..=rest.len()).rev().map(|k| [&base[..], &rest[..k]].concat()).find(|m| modules.contains_key(m));
            if let Some(target) = target.filter(|t| t != module) {
                graph.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    graph
}

/// A circle in `graph`, when there is one.
fn circle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        at: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(i) = path.iter().position(|m| m == at) {
            return Some(path[i..].to_vec());
        }
        if !done.insert(at.clone()) {
            return None;
        }
        path.push(at.clone());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in CRATES {
        let graph = edges(&workspace.join(krate));
        if let Some(found) = circle(&graph) {
            let shown: Vec<String> = found.iter().map(|m| m.join("/")).collect();
            panic!("{krate}: modules that import in a circle: {}", shown.join(" -> "));
        }
    }
}

#[test]
fn a_circle_is_found() {
    let m = |s: &str| s.split('/').map(str::to_string).collect::<Module>();
    let graph = BTreeMap::from([
        (m("a"), BTreeSet::from([m("b")])),
        (m("b"), BTreeSet::from([m("c")])),
        (m("c"), BTreeSet::from([m("a")])),
    ]);
    assert_eq!(circle(&graph).map(|c| c.len()), Some(3));
    let layered = BTreeMap::from([(m("a"), BTreeSet::from([m("b")])), (m("b"), BTreeSet::from([m("c")]))]);
    assert_eq!(circle(&layered), None);
}
