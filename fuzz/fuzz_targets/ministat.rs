//! ministat's reader on standard input.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fsscale::fuzzing::ministat(data));
