//! A plugin's manifest (`<plugin>.toml`): any text is a manifest or an
//! error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasm_mcp::config::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Manifest::parse(text);
    }
});
