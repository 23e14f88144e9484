//! Host-side bindings of `wasi:keyvalue@0.2.0-draft2` (`wit/deps/keyvalue`).
#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../wit/deps/keyvalue",
    world: "wasi:keyvalue/imports",
    imports: { default: async | trappable },
});
