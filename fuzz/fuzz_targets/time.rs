#![no_main]
//! Fuzz target `time`: see [`colmem_fuzz::time`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::time(data));
