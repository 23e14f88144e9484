//! URI templates: any template text parses or is refused; matching any URI
//! against it ends (both matchers are linear in the URI); the host's router
//! and the SDK's matcher agree on every URI; the SDK's variables, put back
//! into the template, give the URI again. Input: the template, a NUL, the
//! URI.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasm_mcp::registry::UriTemplate;
use wasm_mcp_common::uri_template::Part;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (template, uri) = text.split_once('\0').unwrap_or((&text, ""));
    let sdk = wasm_mcp_common::UriTemplate::parse(template);
    let captures = sdk.captures(uri);
    if let Some(values) = &captures {
        let mut values = values.iter().map(|(_, value)| *value);
        let rebuilt: String = sdk
            .parts()
            .iter()
            .map(|part| match part {
                Part::Literal(text) => text.as_str(),
                Part::Variable { .. } => values.next().unwrap(),
            })
            .collect();
        assert_eq!(rebuilt, uri);
    }
    if let Ok(host) = UriTemplate::parse(template) {
        assert_eq!(host.matches(uri), captures.is_some());
        // A template without expressions names exactly itself.
        if !template.contains('{') {
            assert!(host.matches(template));
        }
    }
});
