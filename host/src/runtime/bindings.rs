//! Host-side bindings of the `wasm-mcp:plugin@0.1.0` contract, generated
//! from `wit/` (their docs are the WIT's).
#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "wasm-mcp:plugin/plugin",
    imports: {
        "wasm-mcp:plugin/host.elicit": async,
        "wasm-mcp:plugin/host.sample": async,
        "wasm-mcp:plugin/host.roots": async,
        "wasm-mcp:plugin/host.ask": async,
        default: trappable,
    },
    exports: { default: async },
    with: { "wasi:keyvalue": crate::runtime::keyvalue::bindings::wasi::keyvalue },
    additional_derives: [PartialEq],
});
