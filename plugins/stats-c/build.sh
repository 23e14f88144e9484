#!/usr/bin/env bash
# Builds this C plugin into a component:
#   ./build.sh OUT.wasm ADAPTER.wasm [WIT_DIR]
# Needs clang and lld with a WASI libc and wasm32 compiler-rt (Debian:
# clang lld wasi-libc libclang-rt-14-dev-wasm32), `wit-bindgen c` (cargo
# install wit-bindgen-cli) and wasm-tools. ADAPTER.wasm is the WASI
# preview1 reactor adapter (wasi_snapshot_preview1.reactor.wasm, from a
# wasmtime release or the crate wasi-preview1-component-adapter-provider).
# WIT_DIR is the contract (`wasm-mcp wit > plugin.wit`); ../../wit here.
set -euo pipefail
out=$(realpath -m "$1")
adapter=$(realpath "$2")
cd "$(dirname "$0")"
wit=$(realpath "${3:-../../wit}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Bindings for the world, with its type information in an object file ...
wit-bindgen c "$wit" --world wasm-mcp:plugin/tools-plugin --out-dir "$tmp" >"$tmp/log" 2>&1 \
    || { cat "$tmp/log" >&2; exit 1; }
# ... a core module for WASI preview 1, as a library (a reactor) ...
clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Werror -I"$tmp" -o "$tmp/core.wasm" \
    stats.c "$tmp/tools_plugin.c" "$tmp/tools_plugin_component_type.o"
# ... made a component by the adapter.
wasm-tools component new "$tmp/core.wasm" --adapt "wasi_snapshot_preview1=$adapter" -o "$out"
