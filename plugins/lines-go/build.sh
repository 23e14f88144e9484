#!/usr/bin/env bash
# Builds this Go plugin into a component:
#   ./build.sh OUT.wasm ADAPTER.wasm
# Needs Go 1.24 or newer and wasm-tools on PATH; ADAPTER.wasm is the WASI
# preview1 reactor adapter (wasi_snapshot_preview1.reactor.wasm, from a
# wasmtime release or the crate wasi-preview1-component-adapter-provider).
set -euo pipefail
out=$(realpath -m "$1")
adapter=$(realpath "$2")
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A core module for WASI preview 1, as a library (no main loop) ...
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$tmp/core.wasm" .
# ... with the WIT world it exports, made a component by the adapter. The
# adapter must not call back into Go before Go has started, hence
# --realloc-via-memory-grow.
wasm-tools component embed --encoding utf8 wit "$tmp/core.wasm" -o "$tmp/embedded.wasm"
wasm-tools component new "$tmp/embedded.wasm" --adapt "wasi_snapshot_preview1=$adapter" \
    --realloc-via-memory-grow -o "$out"
