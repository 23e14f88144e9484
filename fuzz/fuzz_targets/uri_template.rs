//! URI templates: any template text parses or is refused, and matching
//! any URI against it ends (the matcher is linear in the URI). Input: the
//! template, a NUL, the URI.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasm_mcp::registry::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (template, uri) = text.split_once('\0').unwrap_or((&text, ""));
    if let Ok(parsed) = UriTemplate::parse(template) {
        let _ = parsed.matches(uri);
        // A template without expressions names exactly itself.
        if !template.contains('{') {
            assert!(parsed.matches(template));
        }
    }
});
