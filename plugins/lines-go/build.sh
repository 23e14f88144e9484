#!/usr/bin/env bash
# Builds this Go plugin into a component, lines-go.wasm beside itself (as
# `wasm-mcp build` and `dev` run it; they then add the WIT docs):
#   ./build.sh
# Needs Go 1.24 or newer, wasm-tools and wasm-mcp (for the WASI preview1
# reactor adapter of its wasmtime release) on PATH.
set -euo pipefail
cd "$(dirname "$0")"
out=lines-go.wasm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
adapter=$tmp/adapter.wasm
wasm-mcp wasi-adapter "$adapter"
# A core module for WASI preview 1, as a library (no main loop) ...
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$tmp/core.wasm" .
# ... with the WIT world it exports, made a component by the adapter. The
# adapter must not call back into Go before Go has started, hence
# --realloc-via-memory-grow.
wasm-tools component embed --encoding utf8 wit "$tmp/core.wasm" -o "$tmp/embedded.wasm"
wasm-tools component new "$tmp/embedded.wasm" --adapt "wasi_snapshot_preview1=$adapter" \
    --realloc-via-memory-grow -o "$out"
