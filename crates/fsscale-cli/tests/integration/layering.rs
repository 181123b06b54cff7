//! The library's modules depend on each other in one direction only: no
//! circle between the top-level modules, nor between the files of one
//! (read from the `crate::`/`super::` paths of the sources, tests excluded).
//! Between crates, the compiler holds the direction.

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
    paths(text, prefix).into_iter().filter_map(|p| p.into_iter().next()).collect()
}

/// The module paths `prefix` starts in `text`, up to two names each
/// (`crate::report::view::X` → `report/view`), a group's items apiece.
fn paths(text: &str, prefix: &str) -> BTreeSet<Vec<String>> {
    let ident = |s: &str| {
        s.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect::<String>()
    };
    // `a::b::{c, d::E}` → [a, b, c], [a, b, d]
    fn expand(rest: &str, ident: &dyn Fn(&str) -> String, into: &mut Vec<Vec<String>>, before: Vec<String>) {
        if let Some(group) = rest.strip_prefix('{') {
            for item in group_items(group) {
                expand(item.trim(), ident, into, before.clone());
            }
            return;
        }
        let name = ident(rest);
        let mut path = before;
        if name.is_empty() || name == "self" {
            into.push(path);
            return;
        }
        path.push(name.clone());
        match rest[name.len()..].strip_prefix("::") {
            Some(tail) if path.len() < 2 => expand(tail, ident, into, path),
            _ => into.push(path),
        }
    }
    let mut found = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        // Only where a path starts: `super::super::x` is read once, from its first `super::`.
        if text[..at].ends_with("::") || text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        expand(&text[at + prefix.len()..], &ident, &mut found, Vec::new());
    }
    found.into_iter().filter(|p| !p.is_empty()).collect()
}

/// What a file's `crate::` and `super::`(`super::`...) paths name, made absolute:
/// `module` is the file's own path (`report/view/column.rs` → `[report, view, column]`,
/// a `mod.rs` → its folder's).
fn absolute_imports(text: &str, module: &[String]) -> BTreeSet<Vec<String>> {
    let mut found: BTreeSet<Vec<String>> = paths(text, "crate::");
    for (at, _) in text.match_indices("super::") {
        if text[..at].ends_with("::") || text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut rest = &text[at..];
        let mut up = 0;
        while let Some(tail) = rest.strip_prefix("super::") {
            up += 1;
            rest = tail;
        }
        let Some(base) = module.len().checked_sub(up) else { continue };
        let mut relative = Vec::new();
        // Two names below the crate are all the graph needs.
        let probe = format!("x::{rest}");
        for p in paths(&probe, "x::") {
            relative.push(p);
        }
        for tail in relative {
            let mut abs: Vec<String> = module[..base].to_vec();
            abs.extend(tail);
            abs.truncate(2);
            if !abs.is_empty() {
                found.insert(abs);
            }
        }
    }
    found
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

/// Every `.rs` file of every crate of the workspace (the root's `src` and `crates/*/src`).
fn every_crates_sources() -> Vec<std::path::PathBuf> {
    let root = crate::util::repo();
    let crates = std::fs::read_dir(root.join("crates")).unwrap().flatten().map(|c| c.path().join("src"));
    let sources: Vec<_> = std::iter::once(root.join("src")).chain(crates).flat_map(|src| files(&src)).collect();
    assert!(sources.iter().any(|f| f.ends_with("fsscale-cli/src/main.rs")), "read every crate's sources");
    sources
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
    let root = crate::util::repo();
    for src in [root.join("src"), root.join("crates/fsscale-analysis/src")] {
        no_circle_in(&src);
    }
}

/// No circle between the top-level modules of the crate whose sources are
/// in `src`, nor between the files of one.
fn no_circle_in(src: &Path) {
    let src = src.to_path_buf();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue; // the crate's root declares the modules
        }
        let sources = if path.is_dir() { files(&path) } else { vec![path.clone()] };
        let mut deps = BTreeSet::new();
        let mut inner: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in &sources {
            let module = module_of(&src, file);
            let imports = absolute_imports(&code(file), &module);
            deps.extend(imports.iter().map(|p| p[0].clone()));
            // Within a folder: its files (a sub-folder counts as one); its mod.rs is the parent.
            if path.is_dir() && module.len() > 1 {
                let sub = module[1].clone();
                let d = imports.iter().filter(|p| p[0] == name && p.len() > 1).map(|p| p[1].clone());
                inner.entry(sub.clone()).or_default().extend(d.filter(|d| *d != sub));
            }
        }
        deps.remove(&name);
        top.insert(name.clone(), deps);
        assert_eq!(circle(&inner), None, "a circle between the files of {name}");
    }
    assert!(top.len() > 10, "read the crate's modules: {:?}", top.keys());
    assert_eq!(circle(&top), None, "a circle between top-level modules");
}

/// The module path of a source file below `src`: `report/view/mod.rs` → `[report, view]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

#[test]
fn imports_of_every_form_are_read_as_absolute_paths() {
    let module = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let abs = |text: &str, m: &[&str]| {
        absolute_imports(text, &module(m)).into_iter().map(|p| p.join("::")).collect::<Vec<_>>()
    };
    // A file two folders down reaching its grandparent's sibling: the form the old test missed.
    assert_eq!(abs("let n = super::super::text::run_note(p);", &["report", "view", "column"]), ["report::text"]);
    assert_eq!(
        abs("use super::super::{format::X, latency::y};", &["report", "view", "column"]),
        ["report::format", "report::latency"]
    );
    assert_eq!(abs("use super::markup::Html;", &["report", "text"]), ["report::markup"]);
    assert_eq!(
        abs("use crate::results::{Point, fixtures::run};", &["report", "text"]),
        ["results", "results::fixtures"]
    );
    assert_eq!(abs("crate::fs::X; crate::results::Y", &["a"]), ["fs", "results"]);
    // A mod.rs is its folder: `super::` from report/view/mod.rs is report.
    assert_eq!(abs("use super::text;", &["report", "view"]), ["report::text"]);
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

#[test]
fn the_analysis_crate_depends_on_no_measuring_crate() {
    // Its code cannot name the measuring crate unless its manifest lists
    // it: the compiler holds the rest.
    let manifest = std::fs::read_to_string(crate::util::repo().join("crates/fsscale-analysis/Cargo.toml")).unwrap();
    let deps = manifest.split("[dependencies]").nth(1).unwrap().split("\n[").next().unwrap();
    assert!(deps.lines().any(|l| l.starts_with("serde ")), "read its dependencies: {deps}");
    for crate_name in ["fsscale ", "fsscale-cli", "fsscale-mpi", "aya", "perf-event-open-sys"] {
        assert!(!deps.lines().any(|l| l.starts_with(crate_name)), "fsscale-analysis depends on {crate_name}");
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
    for file in every_crates_sources() {
        for error in result_error_types(&code(&file)) {
            assert!(
                error != "String",
                "{}: a Result<_, {error}>; use a typed error (vocab::InputError) or anyhow",
                file.display()
            );
        }
    }
}

/// `1.88` → `[1, 88]`, `1.85.0` → `[1, 85, 0]`.
fn version(text: &str) -> Vec<u32> {
    text.split('.').map(|n| n.parse().unwrap_or(0)).collect()
}

#[test]
fn the_declared_rust_version_is_what_the_locked_dependencies_need() {
    let root = crate::util::repo();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let declared = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml declares a rust-version");
    // This platform's packages only: a build fetches only those, so a fresh
    // clone's `cargo test` has every one of them and no others (the
    // FreeBSD-only crates are checked by `.ci/run`'s FreeBSD clippy).
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let host = std::process::Command::new(rustc).arg("-vV").output().unwrap();
    let host = String::from_utf8_lossy(&host.stdout);
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host").to_string();
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform", &host])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    assert!(packages.len() > 20, "read the lockfile's packages");
    let needs: Vec<(Vec<u32>, String)> = packages
        .iter()
        .filter_map(|p| Some((version(p["rust_version"].as_str()?), format!("{} {}", p["name"], p["version"]))))
        .collect();
    for (need, package) in &needs {
        assert!(
            *need <= version(declared),
            "{package} needs Rust {need:?}, above Cargo.toml's rust-version {declared}: raise it (and the README's)"
        );
    }
    // That fsscale's own code builds with it is checked by `.ci/run`, which builds with that toolchain.
}

/// A line of code without its string and character literals and its
/// comment: what is left of braces in it is the code's.
fn without_literals(line: &str) -> String {
    let (mut out, mut chars) = (String::new(), line.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            // A character literal ('{', '\''), not a lifetime ('a).
            '\'' if matches!(chars.clone().nth(1), Some('\'')) || chars.peek() == Some(&'\\') => {
                for s in chars.by_ref() {
                    if s == '\'' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => break,
            _ => out.push(c),
        }
    }
    out
}

/// The functions in `text` longer than `limit` lines, with their first line's number.
fn long_functions(text: &str, limit: usize) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().take_while(|w| *w != "fn").collect();
        let is_fn = line.split_whitespace().any(|w| w == "fn")
            && words
                .iter()
                .all(|w| w.starts_with("pub") || ["const", "unsafe", "async", "extern", "\"C\""].contains(w));
        if !is_fn || line.trim_start().starts_with("//") {
            continue;
        }
        let (mut depth, mut started) = (0i32, false);
        for (j, body) in lines[i..].iter().enumerate() {
            let code = without_literals(body);
            if !started && code.contains(';') && !code.contains('{') {
                break; // a declaration (a trait's), no body
            }
            for c in code.chars() {
                match c {
                    '{' => (depth, started) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if started && depth == 0 {
                if j + 1 > limit {
                    let name = line.split("fn ").nth(1).unwrap_or("").split(['(', '<']).next().unwrap_or("");
                    found.push((i + 1, name.to_string(), j + 1));
                }
                break;
            }
        }
    }
    found
}

#[test]
fn no_function_outside_the_tests_is_over_100_lines() {
    let short = "fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n";
    assert_eq!(long_functions(short, 3), vec![(1, "a".to_string(), 4)]);
    assert!(long_functions(short, 4).is_empty());
    assert!(long_functions("trait T {\n    fn f(&self);\n}\n", 0).is_empty(), "a declaration has no body");
    let mut long = Vec::new();
    for file in every_crates_sources() {
        // Whole files of tests and simulations are tests.
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name == "tests.rs" || name.ends_with("_simulation.rs") {
            continue;
        }
        for (line, function, lines) in long_functions(&code(&file), 100) {
            long.push(format!("{}:{line} {function} ({lines} lines)", file.display()));
        }
    }
    assert!(long.is_empty(), "functions over 100 lines (split them):\n{}", long.join("\n"));
}

/// The `unsafe` blocks of `text` (by line number) that no `// SAFETY:`
/// comment explains, on their line or in the six lines above.
fn unexplained_unsafe(text: &str) -> (usize, Vec<usize>) {
    let opening = concat!("unsafe", " {");
    let lines: Vec<&str> = text.lines().collect();
    let (mut count, mut unexplained) = (0, Vec::new());
    for (at, line) in lines.iter().enumerate() {
        let here = line.matches(opening).count();
        count += here;
        let explained = lines[at.saturating_sub(6)..=at].iter().any(|l| l.contains("// SAFETY"));
        if here > 0 && !explained {
            unexplained.push(at + 1);
        }
    }
    (count, unexplained)
}

#[test]
fn unsafe_blocks_are_at_most_80_and_each_says_why() {
    let o = concat!("unsafe", " {");
    let sample = format!("// SAFETY: a.\n{o} a() }};\n{}{o} b() }};\n", "let b = 1;\n".repeat(6));
    let (count, unexplained) = unexplained_unsafe(&sample);
    assert_eq!((count, unexplained), (2, vec![9]));
    let tests = files(&crate::util::repo().join("crates/fsscale-cli/tests"));
    let (mut total, mut missing) = (0, Vec::new());
    for file in every_crates_sources().into_iter().chain(tests) {
        let (count, unexplained) = unexplained_unsafe(&std::fs::read_to_string(&file).unwrap());
        total += count;
        missing.extend(unexplained.into_iter().map(|line| format!("{}:{line}", file.display())));
    }
    assert!(missing.is_empty(), "unsafe blocks without a SAFETY comment:\n{}", missing.join("\n"));
    assert!(total <= 80, "{total} unsafe blocks: a safe API (rustix's, or sys's) should replace the new ones");
}
