#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rawarray_fuzz::ragged(data));
