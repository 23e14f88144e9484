//! What a skill or a pulled artifact holds: any text is a SKILL.md whose
//! frontmatter parses (bounded) or an error, and any bytes are a skills
//! layer whose paths all stay inside a skill, or an error; never a panic,
//! a hang or a blow-up.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(frontmatter) = wasm_mcp::skills::frontmatter::parse(text) {
            assert!(frontmatter["name"].is_string() && frontmatter["description"].is_string());
        }
    }
    let limits = wasm_mcp::skills::Limits::default();
    if let Ok(files) = wasm_mcp::oci::skills_layer::decode(data, &limits) {
        for path in files.keys() {
            let first = path.split('/').next().unwrap();
            assert!(wasm_mcp::skills::is_valid_name(first), "{path}");
            assert!(!path.split('/').any(|s| s.is_empty() || s.starts_with('.')), "{path}");
        }
    }
});
