#!/usr/bin/env bash
# Builds this Go test fixture into a component, kv-go.wasm beside itself:
#   ./build.sh
# Needs Go 1.24 or newer, wasm-tools and wasm-mcp on PATH (as
# `wasm-mcp new go`'s build.sh; the SDK comes from ../../sdk-go).
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$tmp/core.wasm" .
wasm-tools component embed --encoding utf8 --world wasm-mcp:plugin/tools-plugin ../../wit \
    "$tmp/core.wasm" -o "$tmp/embedded.wasm"
wasm-mcp wasi-adapter "$tmp/adapter.wasm"
# The adapter must not call into Go before Go has started.
wasm-tools component new "$tmp/embedded.wasm" --adapt "wasi_snapshot_preview1=$tmp/adapter.wasm" \
    --realloc-via-memory-grow -o kv-go.wasm
