//! The results loader and what every analysis command does with a document.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fsscale::fuzzing::results(data));
