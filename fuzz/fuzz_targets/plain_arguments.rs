//! JSON arguments of a plain component's functions, lowered to component
//! values for every WIT type family (the `plain` test fixture's
//! functions): values or a clear error, never a panic.
//!
//! Needs `dist/fixtures/plain.wasm` (scripts/build).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use wasm_mcp::runtime::PlainTools;

fn tools() -> &'static (PlainTools, Vec<String>) {
    static TOOLS: OnceLock<(PlainTools, Vec<String>)> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/fixtures/plain.wasm");
        let bytes = std::fs::read(path).expect("dist/fixtures/plain.wasm (run scripts/build)");
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let component = wasmtime::component::Component::new(&engine, &bytes).unwrap();
        let tools = PlainTools::find(&component, &engine, &bytes, "plain", (1000, 16 << 20));
        let names = tools.tools().into_iter().map(|t| t.name).collect();
        (tools, names)
    })
}

fuzz_target!(|data: &[u8]| {
    let (tools, names) = tools();
    let Some((&which, json)) = data.split_first() else {
        return;
    };
    let name = &names[usize::from(which) % names.len()];
    let _ = tools.lower_arguments(name, &String::from_utf8_lossy(json));
});
