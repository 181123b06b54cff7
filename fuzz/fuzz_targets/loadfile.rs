//! The dbench loadfile parser.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fsscale::fuzzing::loadfile(data));
