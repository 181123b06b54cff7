//! Tests whose prerequisite (root, a tool, a server) is missing: under
//! `.ci/run`, which exports `FSSCALE_TEST_STRICT` and installs everything,
//! the test fails; elsewhere it skips, says so at once, and the test binary
//! ends with one summary of every skip and its reason. Shared by the unit
//! tests and the integration tests (included by path: one file, two crates).

use std::io::Write;
use std::sync::{Mutex, Once};

static SKIPPED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
static SUMMARY_AT_EXIT: Once = Once::new();

/// `test` cannot run without what `missing` names: fails it under
/// `FSSCALE_TEST_STRICT`, else records the skip.
pub fn skip(test: &str, missing: &str) {
    if std::env::var_os("FSSCALE_TEST_STRICT").is_some() {
        panic!("{test}: {missing}; under .ci/run (FSSCALE_TEST_STRICT) every prerequisite must be there: it installs them, as root");
    }
    record(test, missing);
}

/// What `test` covers that this kernel lacks (f2fs): nothing any install
/// provides, so never a failure, but said, and in the summary.
#[allow(dead_code)] // The integration tests' alone.
pub fn kernel_lacks(test: &str, what: &str) {
    record(test, &format!("this kernel lacks {what}"));
}

fn record(test: &str, why: &str) {
    // Straight to stderr, past libtest's capture, so `cargo test` shows it.
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
    SKIPPED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push((test.to_string(), why.to_string()));
    // SAFETY: registers a plain function that only locks, formats and writes.
    SUMMARY_AT_EXIT.call_once(|| unsafe {
        libc::atexit(print_summary);
    });
}

/// At exit, after libtest's own summary: how many skipped, which, and why.
extern "C" fn print_summary() {
    let skipped = SKIPPED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut text = format!(
        "\nskipped: {} (a missing tool, root or server fails the test under .ci/run, which installs them; what the kernel lacks does not):\n",
        skipped.len()
    );
    for (test, missing) in skipped.iter() {
        text.push_str(&format!("  {test}: {missing}\n"));
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
