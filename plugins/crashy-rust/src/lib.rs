//! A misbehaving plugin for the host's tests: it traps, panics, writes to
//! stdout and loops forever on request. Never load it in production.

use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Spin {
    /// Stop when the host reports cancellation (otherwise spin until interrupted).
    #[serde(default)]
    poll_cancel: bool,
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool("panic", "Panics", |(): ()| -> String {
            panic!("the plugin panicked on purpose")
        })
        .tool(
            "trap",
            "Executes an unreachable instruction",
            |(): ()| -> String {
                #[cfg(target_arch = "wasm32")]
                core::arch::wasm32::unreachable();
                #[cfg(not(target_arch = "wasm32"))]
                unreachable!()
            },
        )
        .tool(
            "stdout",
            "Writes to stdout and stderr, then answers",
            |(): ()| {
                println!("{{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{{}}}}");
                eprintln!("a line on stderr");
                "wrote to stdout and stderr"
            },
        )
        .tool("spin", "Loops until interrupted", |s: Spin| {
            let mut n: u64 = 0;
            loop {
                n = n.wrapping_add(1);
                if s.poll_cancel && n.is_multiple_of(1_000_000) && host::is_cancelled() {
                    return format!("stopped after {n} iterations");
                }
                std::hint::black_box(n);
            }
        })
}

export_plugin!(plugin);
