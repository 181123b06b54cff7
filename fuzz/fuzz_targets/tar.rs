//! The tar reader: scan, then extract into a fresh directory.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    fsscale::fuzzing::tar(data, dir.path());
});
