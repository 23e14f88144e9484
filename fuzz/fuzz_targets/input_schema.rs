//! A tool's input schema, whatever a plugin lists, and arguments checked
//! against it as a call's are: refused at load within the bounds, or
//! compiled; a check's work estimate never overflows, and a check within
//! the work limit ends (libFuzzer's -timeout catches one that does not).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasm_mcp::registry::{compile_input_schema, schema_limits};

fuzz_target!(|data: &[u8]| {
    // The first line is the schema; the rest, the arguments.
    let text = String::from_utf8_lossy(data);
    let (schema, arguments) = text.split_once('\n').unwrap_or((&text, "{}"));
    let Ok((_, validator, cost)) = compile_input_schema(schema) else {
        return;
    };
    assert!(cost <= schema_limits::MAX_SCHEMA_COST);
    let Ok(arguments) = serde_json::from_str::<serde_json::Value>(arguments) else {
        return;
    };
    if schema_limits::validation_work(cost, &arguments) > schema_limits::MAX_VALIDATION_WORK {
        return;
    }
    if !validator.is_valid(&arguments) {
        assert!(validator.validate(&arguments).is_err());
    }
});
