//! What strangers hand fsscale, through the very code the `cargo fuzz`
//! targets drive (`fsscale::fuzzing`): the fuzzers' seeds, and every input
//! that once broke something, kept in `tests/hostile-inputs/`. No panic,
//! no hang, nothing written outside the directory given, and each hostile
//! input refused as it should be.

use std::path::PathBuf;

use fsscale::fuzzing;

/// The seeds and the kept inputs of one fuzz target, by name.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = crate::util::repo();
    let mut found = Vec::new();
    for dir in [root.join("fuzz/seeds").join(target), root.join("tests/hostile-inputs").join(target)] {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path: PathBuf = entry.unwrap().path();
            found.push((path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()));
        }
    }
    found.sort();
    assert!(found.len() >= 2, "{target}: seeds and kept inputs are there");
    found
}

/// A private directory, and a sibling that must stay empty whatever is extracted.
fn sandbox() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let inside = root.path().join("inside");
    let outside = root.path().join("outside");
    std::fs::create_dir(&inside).unwrap();
    std::fs::create_dir(&outside).unwrap();
    (root, inside, outside)
}

#[test]
fn every_kept_tarball_is_scanned_and_extracted_without_escaping_or_panic() {
    for (name, bytes) in inputs("tar") {
        let (_root, inside, outside) = sandbox();
        fuzzing::tar(&bytes, &inside);
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none(), "{name} wrote outside");
        let scanned = fsscale::archive::scan(&mut &bytes[..]);
        let refused = scanned.as_ref().map_or(true, |s| s.refusal.is_some());
        let expected = !matches!(name.as_str(), "small.tar" | "nested-47.tar" | "link-then-directory-of-its-name.tar");
        assert_eq!(refused, expected, "{name}: {:?}", scanned.map(|s| s.refusal));
    }
}

#[test]
fn a_tarball_thousands_of_directories_deep_is_scanned_in_time_linear_in_each_entrys_depth() {
    // GNU long names, 2,000 levels: each entry's scan costs its depth.
    let mut tar = Vec::new();
    for depth in 1..=2000usize {
        let name = vec!["d"; depth].join("/");
        let mut data = name.into_bytes();
        data.push(0);
        fsscale::tree::write_entry_header(&mut tar, "././@LongLink", 0o644, data.len() as u64, 0, b'L', "").unwrap();
        tar.extend_from_slice(&data);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
        fsscale::tree::write_entry_header(&mut tar, "x", 0o755, 0, 0, b'5', "").unwrap();
    }
    tar.extend_from_slice(&[0; 1024]);
    let scanned = fsscale::archive::scan(&mut &tar[..]).unwrap();
    assert_eq!((scanned.contents.dirs, scanned.refusal), (2000, None));
}

#[test]
fn every_kept_results_file_loads_or_is_refused_and_renders_without_panic() {
    for (name, bytes) in inputs("results") {
        fuzzing::results(&bytes);
        let loaded = std::str::from_utf8(&bytes)
            .map_err(anyhow::Error::from)
            .and_then(|t| fsscale::results::ResultsFile::from_json(t, None));
        assert_eq!(loaded.is_ok(), name != "zero-workers.json", "{name}: {:?}", loaded.err());
    }
}

#[test]
fn every_kept_loadfile_is_parsed_or_refused_quoting_nothing_long() {
    for (name, bytes) in inputs("loadfile") {
        fuzzing::loadfile(&bytes);
        let parsed = fsscale::replay::parse("kept.load", std::str::from_utf8(&bytes).unwrap());
        if let Err(error) = parsed {
            let text = error.to_string();
            assert!(!text.contains("and the rest") && !text.contains('\u{1b}'), "{name}: {text}");
        }
    }
}

#[test]
fn every_kept_ministat_input_is_read_without_panic() {
    for (_, bytes) in inputs("ministat") {
        fuzzing::ministat(&bytes);
    }
}

#[test]
fn every_kept_store_is_refused_or_read_without_panic_and_a_foreign_one_is_never_changed() {
    for (name, bytes) in inputs("store") {
        let dir = tempfile::tempdir().unwrap();
        fuzzing::store(&bytes, dir.path());
        let path = dir.path().join(&name);
        std::fs::write(&path, &bytes).unwrap();
        let opened = fsscale::history::Store::open(&path);
        let ours = matches!(
            name.as_str(),
            "one-result.sqlite" | "document-not-json.sqlite" | "figures-of-another-type.sqlite"
        );
        assert_eq!(opened.is_ok(), ours, "{name}: {:?}", opened.err().map(|e| format!("{e:#}")));
        if !ours {
            assert!(std::fs::read(&path).unwrap() == bytes, "{name} was changed");
        }
    }
}
