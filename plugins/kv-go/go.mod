module kvgo

go 1.24

require wasmmcp v0.0.0

// The SDK as `wasm-mcp new go` copies it, from its own folder here.
replace wasmmcp => ../../sdk-go/wasmmcp
