#!/usr/bin/env bash
# Builds this C test fixture into a component (as plugins/stats-c does):
#   ./build.sh OUT.wasm ADAPTER.wasm
set -euo pipefail
out=$(realpath -m "$1")
adapter=$(realpath "$2")
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wit-bindgen c ../../wit --world wasm-mcp:plugin/tools-plugin --out-dir "$tmp" >"$tmp/log" 2>&1 \
    || { cat "$tmp/log" >&2; exit 1; }
clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Werror -I"$tmp" -o "$tmp/core.wasm" \
    kv.c "$tmp/tools_plugin.c" "$tmp/tools_plugin_component_type.o"
wasm-tools component new "$tmp/core.wasm" --adapt "wasi_snapshot_preview1=$adapter" -o "$out"
