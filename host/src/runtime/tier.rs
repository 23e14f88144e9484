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

/// Nice 10 (or the thread's own nice, if higher: never a higher priority
/// than it had) for the calling thread alone (Linux gives each thread its
/// own), with a short time slice: for a thread of its own doing work
/// nothing waits for yet.
///
/// The slice matters as much as the weight. Linux's scheduler (EEVDF) lets
/// the thread on a core run out its slice (0.75 ms by default, whatever
/// its nice) before a thread that wakes up there takes the core: at start,
/// the first load's threads waited up to that long behind these at each
/// wake-up. With a slice of 0.1 ms (Linux 6.12 and later; earlier kernels
/// keep their own), they wait at most that.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() {
    // SAFETY: system calls on this thread's own id, no memory passed.
    let tid = unsafe { libc::gettid() } as libc::id_t;
    // (-1 is also getpriority's error: then 10 all the same.)
    let nice = LOWER_NICE.max(unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) });
    let attr = SchedAttr {
        nice,
        runtime: LOWER_SLICE_NS,
        ..SchedAttr::default()
    };
    // SAFETY: a system call on the calling thread (0); the kernel reads
    // `attr`, whose size it is told, and keeps no pointer to it.
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if set != 0 {
        // Refused (a seccomp filter may): the weight alone.
        // SAFETY: a system call on this thread's own id, no memory passed.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
    }
}

/// The nice [`lower_this_thread`] gives.
#[cfg(target_os = "linux")]
const LOWER_NICE: i32 = 10;

/// The time slice [`lower_this_thread`] asks for, in ns (Linux takes 0.1
/// to 100 ms).
#[cfg(target_os = "linux")]
const LOWER_SLICE_NS: u64 = 100_000;

/// Linux's `struct sched_attr` (its first version, 56 bytes), for a fair
/// thread (`SCHED_OTHER`, policy 0): its nice and, as `runtime`, its slice.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Debug)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

#[cfg(target_os = "linux")]
impl Default for SchedAttr {
    fn default() -> Self {
        SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: libc::SCHED_OTHER as u32,
            flags: 0,
            nice: 0,
            priority: 0,
            runtime: 0,
            deadline: 0,
            period: 0,
            util_min: 0,
            util_max: 0,
        }
    }
}

/// Nice 10 where a thread has its own priority (Linux); elsewhere nothing.
#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Whether the running kernel is `major.minor` or later.
    fn kernel_at_least(major: u32, minor: u32) -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut parts = release
            .trim()
            .split(['.', '-'])
            .map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
    }

    #[test]
    fn a_lowered_thread_has_a_lower_weight_and_a_short_slice() {
        std::thread::spawn(|| {
            // SAFETY: a system call on this thread, no memory passed.
            let had =
                unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
            lower_this_thread();
            let mut attr = SchedAttr::default();
            // SAFETY: the kernel writes at most `size` bytes into `attr`.
            let got = unsafe {
                libc::syscall(
                    libc::SYS_sched_getattr,
                    0,
                    &mut attr as *mut SchedAttr,
                    std::mem::size_of::<SchedAttr>() as u32,
                    0,
                )
            };
            assert_eq!(got, 0, "sched_getattr failed");
            // Nice 10, or the nice it had if that was higher already.
            assert_eq!(attr.nice, LOWER_NICE.max(had), "{attr:?}");
            // A fair thread's own slice is Linux 6.12's.
            if kernel_at_least(6, 12) {
                assert_eq!(attr.runtime, LOWER_SLICE_NS, "{attr:?}");
            }
        })
        .join()
        .unwrap();
    }
}
