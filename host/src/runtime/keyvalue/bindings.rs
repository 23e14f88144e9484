//! Host-side bindings of `wasi:keyvalue@0.2.0-draft2` (`wit/deps/keyvalue`),
//! with the `bucket` and `cas` resources as the host's own types
//! ([`super::host::Bucket`], [`super::host::Cas`]).
#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../wit/deps/keyvalue",
    world: "wasi:keyvalue/imports",
    imports: { default: async | trappable },
    with: {
        "wasi:keyvalue/store.bucket": super::host::Bucket,
        "wasi:keyvalue/atomics.cas": super::host::Cas,
    },
});
