//! The config file: any text is a config or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use wasm_mcp::config::Config;

/// An empty folder that relative root paths resolve against.
fn base() -> &'static std::path::Path {
    static BASE: OnceLock<tempfile::TempDir> = OnceLock::new();
    BASE.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
        .path()
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Config::parse(text, base());
    }
});
