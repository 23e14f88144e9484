//! A plugin that never finishes listing what it offers: building its
//! catalogue loops forever. A test fixture for load-time deadlines; never
//! load it in production.

use wasm_mcp_sdk::prelude::*;

fn plugin() -> Plugin {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
        if n == u64::MAX {
            return Plugin::new();
        }
    }
}

export_plugin!(plugin);
