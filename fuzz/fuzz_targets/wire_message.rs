#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| vouch_proto::fuzz_wire_message(data));
