//! Writes the WASI preview1 reactor adapter of the wasmtime release the
//! host is built with to the path given as the only argument.

use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;

fn main() {
    let Some(out) = std::env::args_os().nth(1) else {
        eprintln!("usage: preview1-adapter OUT.wasm");
        std::process::exit(2);
    };
    if let Err(e) = std::fs::write(&out, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER) {
        eprintln!("cannot write {}: {e}", out.to_string_lossy());
        std::process::exit(1);
    }
}
