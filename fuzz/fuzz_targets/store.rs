//! The history store's open-and-read path, on a database file of any bytes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    fsscale::fuzzing::store(data, dir.path());
});
