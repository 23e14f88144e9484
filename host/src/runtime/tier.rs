//! One compiler's engine (optimising or baseline) and the linker that
//! instantiates what it compiled, with every import the host provides.

use super::bindings;
use super::state::CallState;
use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, Strategy};

/// One compiler's engine and the linker that instantiates what it compiled.
pub(super) struct Tier {
    pub(super) engine: Engine,
    pub(super) linker: Linker<CallState>,
}

impl Tier {
    /// An engine compiling with `strategy`, its instances allocated by
    /// `allocation`, and a linker with every import plugins may use.
    pub(super) fn new(strategy: Strategy, allocation: InstanceAllocationStrategy) -> Result<Self> {
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .strategy(strategy)
            .allocation_strategy(allocation);
        let engine = Engine::new(&wasm)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        bindings::wasm_mcp::plugin::types::add_to_linker::<_, HasSelf<CallState>>(
            &mut linker,
            |s| s,
        )?;
        super::imports::add_to_linker(&mut linker)?;
        Ok(Tier { engine, linker })
    }
}
