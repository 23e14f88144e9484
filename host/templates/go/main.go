// {{name}}: a wasm-mcp plugin in Go. It exports the plain functions of
// wit/world.wit, and wasm-mcp serves each one as a tool (its input schema
// comes from the WIT types). See README.md to build it.
package main

import "unsafe"

func main() {}

// greet: func(name: string) -> string
//
//go:wasmexport greet
func greet(ptr, length uint32) uint32 {
	return returnString("Hello, " + argument(ptr, length) + "!")
}

// The canonical ABI by hand, for string arguments and results (a function
// taking two strings takes two (pointer, length) pairs; one returning a
// u32 returns it directly). wasm-mcp starts a fresh instance for every
// call, so nothing is ever freed.

// The host asks for room for each argument before the call, at a moment
// when the instance may not call out, so this must not use the Go
// allocator (its collector calls WASI): a bump allocator over a fixed
// arena instead. A larger argument gets an address past the end of
// memory, which the host reports as an error.
const arenaSize = 16 << 20

var (
	arena [arenaSize]byte
	used  uint32
)

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	base := uint32(uintptr(unsafe.Pointer(&arena)))
	start := (used + align - 1) &^ (align - 1)
	if oldSize != 0 || uint64(start)+uint64(newSize) > arenaSize {
		return ^uint32(0)
	}
	used = start + newSize
	return base + start
}

func argument(ptr, length uint32) string {
	return unsafe.String((*byte)(unsafe.Pointer(uintptr(ptr))), length)
}

// Results stay reachable from here until the instance ends.
var (
	keep       []string
	resultArea [2]uint32
)

// A string result goes back as a pointer to (pointer, length).
func returnString(s string) uint32 {
	keep = append(keep, s)
	resultArea[0] = uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	resultArea[1] = uint32(len(s))
	return uint32(uintptr(unsafe.Pointer(&resultArea)))
}
