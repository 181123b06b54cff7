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

/// Names `prefix` is followed by in `text` (`crate::fs::x` → `fs`), the
/// grouped ones too (`crate::{fs, results::X}` → `fs`, `results`).
fn mentions(text: &str, prefix: &str) -> BTreeSet<String> {
    let name = |s: &str| s.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect::<String>();
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => names.extend(group_items(group).into_iter().map(|item| name(item.trim()))),
            None => {
                names.insert(name(rest));
            }
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// The items of a `{...}` group up to its closing brace, split at its own commas.
fn group_items(group: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0usize, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
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
    let grouped = "use crate::{\n    fs::{FsKind, Fresh},\n    results::X,\n    Plain,\n    sys,\n};";
    assert_eq!(mentions(grouped, "crate::"), ["fs", "results", "sys"].map(String::from).into());
    assert_eq!(
        mentions("use super::{self, measure::{Inputs}, window};", "super::"),
        ["measure", "window"].map(String::from).into()
    );
}

/// The modules `lib.rs` builds on Linux only (`#[cfg(target_os = "linux")]`).
fn linux_only_modules(lib: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = lib.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].trim() == "#[cfg(target_os = \"linux\")]")
        .filter_map(|w| w[1].trim().strip_prefix("pub mod ")?.strip_suffix(';').map(String::from))
        .collect()
}

#[test]
fn the_analysis_half_needs_no_linux_only_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let linux = linux_only_modules(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    assert!(linux.contains("runner") && linux.contains("workloads"), "{linux:?}");
    for module in ["analyze", "compare", "ministat", "report", "results", "stats", "vocab", "atomic_file", "lockfile"] {
        let path = src.join(module);
        let sources = if path.is_dir() { files(&path) } else { vec![src.join(format!("{module}.rs"))] };
        for file in sources {
            // `fsscale list`'s catalogue describes what the workloads do: built on Linux only.
            if file.ends_with("report/catalogue.rs") {
                continue;
            }
            let used = mentions(&code(&file), "crate::");
            let bad: Vec<&String> = used.intersection(&linux).collect();
            assert!(bad.is_empty(), "{} uses Linux-only {bad:?}", file.display());
        }
    }
}

/// The error types of every `Result<T, E>` in `text` (`E` as written).
fn result_error_types(text: &str) -> Vec<String> {
    let compact: String = text.split_whitespace().collect();
    let mut found = Vec::new();
    for (at, _) in compact.match_indices("Result<") {
        let (mut depth, mut last_comma) = (1, None);
        for (i, c) in compact[at + 7..].char_indices() {
            match c {
                '<' | '(' => depth += 1,
                '>' | ')' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Some(comma) = last_comma {
                            found.push(compact[at + 7 + comma + 1..at + 7 + i].to_string());
                        }
                        break;
                    }
                }
                ',' if depth == 1 => last_comma = Some(i),
                _ => {}
            }
        }
    }
    found
}

#[test]
fn no_function_returns_a_bare_string_error() {
    assert_eq!(result_error_types("Result<Vec<(u8, String)>, String> Result<u8> Result<(), E>"), ["String", "E"]);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for file in files(&src) {
        for error in result_error_types(&code(&file)) {
            assert!(
                error != "String",
                "{}: a Result<_, {error}>; use a typed error (vocab::InputError) or anyhow",
                file.display()
            );
        }
    }
}
