#![no_main]
//! Fuzz target `codec`: see [`colmem_fuzz::store_codec`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::store_codec(data));
