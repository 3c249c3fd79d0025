#![no_main]
//! Fuzz target `config`: see [`colmem_fuzz::config`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::config(data));
