// A plain component in Go: the functions of the WIT world in wit/world.wit
// and no wasm-mcp contract. The host serves each function as a tool.
// Build it with build.sh (Go 1.24 or newer and wasm-tools).
package main

import (
	"sort"
	"strings"
	"unicode"
	"unsafe"
)

func main() {}

//go:wasmexport line-count
func lineCount(ptr, length uint32) uint32 {
	text := argument(ptr, length)
	if text == "" {
		return 0
	}
	return uint32(strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1)
}

//go:wasmexport sort-lines
func sortLines(ptr, length uint32) uint32 {
	lines := strings.Split(argument(ptr, length), "\n")
	sort.Strings(lines)
	return returnString(strings.Join(lines, "\n"))
}

//go:wasmexport title-case
func titleCase(ptr, length uint32) uint32 {
	var out strings.Builder
	start := true
	for _, r := range argument(ptr, length) {
		if start && unicode.IsLetter(r) {
			r = unicode.ToUpper(r)
		}
		start = unicode.IsSpace(r)
		out.WriteRune(r)
	}
	return returnString(out.String())
}

// The canonical ABI, by hand, for string arguments and results. The host
// starts a fresh instance for every call, so nothing here is ever freed.

// The host asks for room for each argument before the call, inside a
// region where the instance may not call out, so this must not touch the
// Go allocator (its collector calls WASI functions): a bump allocator over
// a fixed arena instead. An argument larger than the arena gets an
// address past the end of memory, which the host reports as an error.
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
		return ^uint32(0) // the canonical ABI never grows an argument's block
	}
	used = start + newSize
	return base + start
}

// Results stay reachable from here until the instance ends.
var keep []string

func argument(ptr, length uint32) string {
	return unsafe.String((*byte)(unsafe.Pointer(uintptr(ptr))), length)
}

// A string result goes back as a pointer to (pointer, length).
var resultArea [2]uint32

func returnString(s string) uint32 {
	keep = append(keep, s)
	resultArea[0] = uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	resultArea[1] = uint32(len(s))
	return uint32(uintptr(unsafe.Pointer(&resultArea)))
}
