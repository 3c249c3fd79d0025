#![no_main]
//! Fuzz target `snapshot`: see [`colmem_fuzz::snapshot`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::snapshot(data));
