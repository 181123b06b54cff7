//! What a stranger's bytes go through, one function per parser: the `cargo
//! fuzz` targets (`fuzz/`) call these, and so does the ordinary test suite
//! on every input that once broke something (`tests/hostile-inputs/`). An
//! error is a fine answer; a panic, a hang or a write outside the given
//! directory is a bug.

use std::io::Write;
use std::path::Path;

/// The tar reader: the pre-run scan, then (where it finds nothing to
/// refuse) the extraction into `dir`, which must be empty.
#[cfg(target_os = "linux")]
pub fn tar(bytes: &[u8], dir: &Path) {
    use std::os::fd::AsFd;
    let Ok(scanned) = crate::archive::scan(&mut &bytes[..]) else { return };
    if scanned.refusal.is_some() {
        return;
    }
    let root = std::fs::File::open(dir).expect("the fuzzing directory opens");
    let _ = crate::archive::extract(&mut &bytes[..], root.as_fd(), &|| false, &|_| {});
}

/// The results loader, and what every analysis command computes and shows
/// of a loaded document.
pub fn results(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let Ok(doc) = crate::results::ResultsFile::from_json(text, None) else { return };
    let _ = crate::report::render_results_with(&doc, crate::report::TextOptions { explain_all: true, legend: true });
    let _ = crate::analyze::analyze_results(&doc);
    let comparison = crate::compare::compare(&doc, &doc, "a", "b", &crate::compare::CompareConfig::DEFAULT);
    for format in [crate::report::CompareFormat::Text, crate::report::CompareFormat::Markdown] {
        let _ = crate::report::render_comparisons(std::slice::from_ref(&comparison), format, true);
    }
    for format in [
        crate::report::ExportFormat::Csv,
        crate::report::ExportFormat::Markdown,
        crate::report::ExportFormat::JsonLines,
    ] {
        let _ = crate::report::export(&doc, format, true);
    }
}

/// The loadfile parser (`replay --trace`).
#[cfg(target_os = "linux")]
pub fn loadfile(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Ok(trace) = crate::replay::parse("fuzzed.load", text) {
        let _ = trace.mix();
        let _ = trace.bytes_per_pass();
    }
}

/// ministat's reader, on standard input, with its default options.
pub fn ministat(bytes: &[u8]) {
    let Ok(crate::ministat::Request::Run(options)) = crate::ministat::parse_args(&[]) else {
        unreachable!("no arguments is a run")
    };
    let _ = crate::ministat::run(&options, 74, &mut &bytes[..]);
}

/// The store's open-and-read path: `bytes` as the database file in `dir`
/// (a private directory), opened, migrated if it is fsscale's, and read
/// through every query the commands make.
pub fn store(bytes: &[u8], dir: &Path) {
    let path = dir.join("fuzzed.sqlite");
    let _ = std::fs::remove_file(&path);
    for side in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(side);
        let _ = std::fs::remove_file(name);
    }
    std::fs::File::create(&path).and_then(|mut f| f.write_all(bytes)).expect("the fuzzing directory is writable");
    let Ok(store) = crate::history::Store::open(&path) else { return };
    let Ok(series) = store.series(&crate::history::SeriesFilter::default()) else { return };
    let _ = crate::history::changes(&store, &series, &crate::history::ChangeConfig::DEFAULT);
    for s in series.iter().take(16) {
        let Ok(entries) = store.entries(s.id, None) else { continue };
        for entry in entries.iter().take(4) {
            let _ = store.document(entry.result);
        }
    }
}
