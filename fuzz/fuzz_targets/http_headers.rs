//! The HTTP header checks: the Host/Origin guard, and the stateless
//! revision's `Mcp-Method`, `Mcp-Name` (base64 form included) and
//! `Mcp-Param-*` checks against a body and a tool schema. Input: fields
//! separated by NUL: method, params JSON, schema JSON, then header
//! name/value pairs.
#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use wasm_mcp::transport::http::headers;
use wasm_mcp::transport::http::Guard;

fuzz_target!(|data: &[u8]| {
    let mut fields = data.split(|b| *b == 0);
    let method = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
    let params: Map<String, Value> =
        serde_json::from_slice(fields.next().unwrap_or_default()).unwrap_or_default();
    let schema: Option<Value> = serde_json::from_slice(fields.next().unwrap_or_default()).ok();
    let mut map = HeaderMap::new();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        else {
            continue;
        };
        map.append(name, value);
    }
    let _ = headers::validate(&map, &method, &params, schema.as_ref());
    if let Some(schema) = &schema {
        let _ = headers::header_parameters(schema);
    }
    if let Ok(Some(name)) = headers::header(&map, "mcp-name") {
        let _ = headers::decode(name);
    }
    for loopback in [true, false] {
        let guard = Guard {
            loopback,
            allowed_hosts: vec!["mcp.example.com".into()],
            allowed_origins: vec!["https://app.example.com".into()],
        };
        let _ = guard.check(&map);
    }
});
