#![no_main]
//! Fuzz target `locomo`: see [`colmem_fuzz::locomo`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::locomo(data));
