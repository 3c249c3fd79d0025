#![no_main]
//! Fuzz target `redact`: see [`colmem_fuzz::redact`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::redact(data));
