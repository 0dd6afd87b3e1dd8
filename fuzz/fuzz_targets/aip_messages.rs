#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| vouch_core::fuzz_targets::aip_messages(data));
