//! One compiler's engine (optimising or baseline) and the linker that
//! instantiates what it compiled, with every import the host provides.

use super::bindings;
use super::slots::Slots;
use super::state::CallState;
use super::ticker::Ticker;
use anyhow::Result;
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, Strategy};

/// One compiler's engine and the linker that instantiates what it compiled.
pub(super) struct Tier {
    pub(super) engine: Engine,
    pub(super) linker: Linker<CallState>,
    /// The instances that may be alive at once, shared by every tier
    /// (`[server] max_instances`).
    pub(super) instances: Arc<Slots>,
    /// The epoch ticker every tier shares.
    pub(super) ticker: Arc<Ticker>,
}

impl Tier {
    /// An engine compiling with `strategy`, its instances allocated by
    /// `allocation`, and a linker with every import plugins may use.
    pub(super) fn new(
        strategy: Strategy,
        allocation: InstanceAllocationStrategy,
        instances: Arc<Slots>,
        ticker: Arc<Ticker>,
    ) -> Result<Self> {
        // The baseline compiler builds each component on the thread that
        // asks: at startup many compile at once, and in the shared thread
        // pool a small component's job would wait behind every function of
        // a large one.
        let parallel = !matches!(strategy, Strategy::Winch);
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .strategy(strategy)
            .parallel_compilation(parallel)
            .allocation_strategy(allocation);
        // For profiling plugins (CONTRIBUTING.md): a perf map of the
        // compiled functions, so that `perf report` names them.
        if std::env::var_os("WASM_MCP_PERFMAP").is_some() {
            wasm.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&wasm)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        bindings::wasm_mcp::plugin::types::add_to_linker::<_, HasSelf<CallState>>(
            &mut linker,
            |s| s,
        )?;
        super::imports::add_to_linker(&mut linker)?;
        super::keyvalue::add_to_linker(&mut linker)?;
        super::tool_calls::add_to_linker(&mut linker)?;
        Ok(Tier {
            engine,
            linker,
            instances,
            ticker,
        })
    }
}

/// Compiles `bytes` with `engine` (the optimising tier's), its compiler
/// threads at a lower priority ([`lower_compile_priority`]).
pub(super) fn compile_optimized(engine: &Engine, bytes: &[u8]) -> Result<Component> {
    lower_compile_priority();
    Ok(Component::new(engine, bytes)?)
}

/// Runs the optimising compiler's threads (rayon's global pool, on which
/// wasmtime compiles functions in parallel) at a lower priority than the
/// rest of the host, so that an optimised build made in the background
/// (after a baseline build already serves) never slows the calls being
/// served. Once per process, just before the first compile with the
/// optimising compiler (a host whose plugins all come from the compile
/// cache never starts these threads); a pool built before stays as it is.
fn lower_compile_priority() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("compile-{i}"))
            .start_handler(|_| lower_this_thread())
            .build_global();
    });
}

/// Nice 10 for the calling thread alone (Linux gives each thread its own):
/// for a thread of its own doing work nothing waits for yet.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() {
    // SAFETY: two system calls on this thread's own id, no memory passed.
    let tid = unsafe { libc::gettid() };
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) };
}

/// Nice 10 where a thread has its own priority (Linux); elsewhere nothing.
#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() {}
