//! The crate's modules depend on each other in one direction only: no
//! circle between the top-level modules, nor between the files of one
//! (read from the `crate::`/`super::` paths of the sources, tests excluded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The source of a file without its unit tests (they may reach anywhere).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Names `prefix` is followed by in `text` (`crate::fs::x` → `fs`).
fn mentions(text: &str, prefix: &str) -> BTreeSet<String> {
    text.match_indices(prefix)
        .map(|(at, _)| {
            text[at + prefix.len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// A circle in `graph`, if there is one (depth-first search with colours).
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten().filter(|n| graph.contains_key(*n)) {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|p| p == next).unwrap();
                    let mut found = path[from..].to_vec();
                    found.push(next.clone());
                    return Some(found);
                }
                0 => {
                    if let Some(found) = visit(next, graph, state, path) {
                        return Some(found);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node).copied().unwrap_or(0) == 0 {
            if let Some(found) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(found);
            }
        }
    }
    None
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if ["main", "lib", "cli", "commands", "terminal"].contains(&name.as_str()) {
            continue; // the binary's own modules
        }
        let sources = if path.is_dir() { files(&path) } else { vec![path.clone()] };
        let mut deps = BTreeSet::new();
        for file in &sources {
            deps.extend(mentions(&code(file), "crate::"));
        }
        deps.remove(&name);
        top.insert(name.clone(), deps);
        // Within a folder: its files (a sub-folder counts as one), parent excluded.
        if path.is_dir() {
            let mut inner: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for file in &sources {
                let rel = file.strip_prefix(&path).unwrap();
                let sub =
                    rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
                if sub == "mod" {
                    continue;
                }
                let text = code(file);
                let mut d = mentions(&text, "super::");
                if rel.components().count() == 1 {
                    d.extend(mentions(&text, &format!("crate::{name}::")));
                } else {
                    d = mentions(&text, &format!("crate::{name}::"));
                }
                d.remove(&sub);
                inner.entry(sub).or_default().extend(d);
            }
            assert_eq!(circle(&inner), None, "a circle between the files of {name}");
        }
    }
    assert!(top.len() > 15, "read the crate's modules: {:?}", top.keys());
    assert_eq!(circle(&top), None, "a circle between top-level modules");
}

#[test]
fn the_circle_finder_finds_circles() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(circle(&graph(&[("a", "b"), ("b", "c")])), None);
    let found = circle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(found.first(), found.last());
    assert_eq!(found.len(), 4);
    assert_eq!(mentions("use crate::fs::X; crate::results::Y", "crate::"), ["fs", "results"].map(String::from).into());
}
