//! JSON-RPC message parsing, as every transport does it: any text gives a
//! message or an error with the id it could read, never a panic; a parsed
//! message survives being answered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasm_mcp::protocol::{parse_message, Incoming, RpcError};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_message(text.trim()) {
        Ok(Incoming::Request { id, method, params }) => {
            let answer = RpcError::invalid_params(format!("{method}: {}", params.len()));
            let response = answer.response(&id);
            assert!(serde_json::to_string(&response).is_ok());
        }
        Ok(Incoming::Notification { .. } | Incoming::Response { .. }) => {}
        Err((id, error)) => {
            // The error names at most a short excerpt of the input.
            assert!(error.message.len() < 2048, "{}", error.message.len());
            let _ = serde_json::to_string(&error.response(&id)).unwrap();
        }
    }
});
