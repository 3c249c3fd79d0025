#![no_main]
//! Fuzz target `names`: see [`colmem_fuzz::names`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::names(data));
