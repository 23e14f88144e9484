//! A plugin for the host's tests whose tool list differs at every listing:
//! one tool's name carries a random number (each call runs in a fresh
//! instance with fresh randomness). Its `relist` tool tells the host, through
//! the `list-changed` import, that its tools changed.

use std::hash::BuildHasher;
use wasm_mcp_sdk::host::ListKind;
use wasm_mcp_sdk::prelude::*;

fn plugin() -> Plugin {
    // RandomState is seeded from wasi:random.
    let n = std::collections::hash_map::RandomState::new().hash_one(0u8) as u32;
    Plugin::new()
        .tool(
            "relist",
            "Tells the host this plugin's tools changed",
            |(): ()| {
                host::list_changed(ListKind::Tools);
                "the host was told"
            },
        )
        .tool(
            &format!("shifting_{n:08x}"),
            "A tool whose name changes at every listing",
            |(): ()| "still here",
        )
}

export_plugin!(plugin);
