#![no_main]
//! Fuzz target `trajectories`: see [`colmem_fuzz::trajectories`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| colmem_fuzz::trajectories(data));
