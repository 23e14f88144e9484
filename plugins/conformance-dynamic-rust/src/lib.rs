//! Conformance fixture: lists that change on demand. Its tool and prompt
//! names carry a random number, so every re-listing differs; the trigger
//! tools tell the host, which re-lists the plugin and notifies clients.
//! Served only when the conformance fixtures are loaded.

use std::hash::BuildHasher;
use wasm_mcp_sdk::host::ListKind;
use wasm_mcp_sdk::prelude::*;

fn plugin() -> Plugin {
    // RandomState is seeded from wasi:random: a fresh number per instance.
    let n = std::collections::hash_map::RandomState::new().hash_one(0u8) as u32;
    Plugin::new()
        .tool(
            "test_trigger_tool_change",
            "Changes the tool list (the host then notifies clients)",
            |(): ()| {
                host::list_changed(ListKind::Tools);
                "the tool list changed"
            },
        )
        .tool(
            "test_trigger_prompt_change",
            "Changes the prompt list (the host then notifies clients)",
            |(): ()| {
                host::list_changed(ListKind::Prompts);
                "the prompt list changed"
            },
        )
        .tool(
            &format!("test_dynamic_tool_{n:08x}"),
            "A tool whose name changes whenever the list changes",
            |(): ()| "dynamic",
        )
        .prompt(
            &format!("test_dynamic_prompt_{n:08x}"),
            "A prompt whose name changes whenever the list changes",
            |(): ()| "dynamic",
        )
}

export_plugin!(plugin);
