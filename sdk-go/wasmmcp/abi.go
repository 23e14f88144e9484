package wasmmcp

// The canonical ABI of the contract's `tools` interface
// (wasm-mcp:plugin/tools@0.1.0), written out once here so that a plugin
// is plain Go: `list-tools` returns a list of `tool` records, `call-tool`
// takes two strings and returns `result<call-result, error>`. Offsets
// and sizes are those of the records in wit/plugin.wit. The `resources`
// interface serves the views (ServeView); a component built for a world
// without it (tools-plugin) leaves those exports out.

import "unsafe"

// The host asks for room for each argument before a call, at a moment
// when the instance may not call out, so this must not use the Go
// allocator (its collector calls WASI): a bump allocator over a fixed
// arena instead. wasm-mcp starts a fresh instance for every call, so
// nothing is ever freed. A larger argument gets an address past the end
// of memory, which the host reports as an error.
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

// What results point to stays reachable from here until the instance ends.
var (
	keep       []any
	returnArea [10]uint32
)

// Sizes of the records, in bytes.
const (
	toolSize             = 100
	contentSize          = 144
	resourceSize         = 144
	resourceContentsSize = 44
)

// block returns zeroed memory of `size` bytes, 8-aligned, kept alive.
func block(size int) unsafe.Pointer {
	words := make([]uint64, (size+7)/8+1)
	keep = append(keep, words)
	return unsafe.Pointer(&words[0])
}

func address(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

func putU8(base unsafe.Pointer, offset uintptr, v uint8) { *(*uint8)(unsafe.Add(base, offset)) = v }

func putU32(base unsafe.Pointer, offset uintptr, v uint32) {
	*(*uint32)(unsafe.Add(base, offset)) = v
}

// putString writes a string as (pointer, length) at `offset`.
func putString(base unsafe.Pointer, offset uintptr, s string) {
	keep = append(keep, s)
	putU32(base, offset, address(unsafe.Pointer(unsafe.StringData(s))))
	putU32(base, offset+4, uint32(len(s)))
}

// putOptionString writes option<string>: its tag at `offset`, the string
// 4 bytes after.
func putOptionString(base unsafe.Pointer, offset uintptr, s *string) {
	if s == nil {
		return
	}
	putU8(base, offset, 1)
	putString(base, offset+4, *s)
}

// putOptionBool writes option<bool>: its tag, then the value.
func putOptionBool(base unsafe.Pointer, offset uintptr, b *bool) {
	if b == nil {
		return
	}
	putU8(base, offset, 1)
	if *b {
		putU8(base, offset+1, 1)
	}
}

func argument(ptr, length uint32) string {
	return unsafe.String((*byte)(unsafe.Pointer(uintptr(ptr))), length)
}

//go:wasmexport wasm-mcp:plugin/tools@0.1.0#list-tools
func listTools() uint32 {
	list := block(toolSize * len(registered))
	for i, t := range registered {
		base := unsafe.Add(list, i*toolSize)
		putString(base, 0, t.name)
		putOptionString(base, 8, t.title)
		putOptionString(base, 20, &t.description)
		putString(base, 32, t.inputSchema)
		putOptionString(base, 40, t.outputSchema)
		if a := t.annotations; a != nil {
			putU8(base, 52, 1)
			putOptionString(base, 56, a.title)
			putOptionBool(base, 68, a.readOnly)
			putOptionBool(base, 70, a.destructive)
			putOptionBool(base, 72, a.idempotent)
			putOptionBool(base, 74, a.openWorld)
		}
		// task-support: forbidden (0); icons: none.
		putOptionString(base, 88, t.metaText)
	}
	returnArea[0] = address(list)
	returnArea[1] = uint32(len(registered))
	return address(unsafe.Pointer(&returnArea))
}

//go:wasmexport wasm-mcp:plugin/tools@0.1.0#call-tool
func callTool(namePtr, nameLen, argumentsPtr, argumentsLen uint32) uint32 {
	returnArea = [10]uint32{}
	area := unsafe.Pointer(&returnArea)
	result, failure := call(argument(namePtr, nameLen), argument(argumentsPtr, argumentsLen))
	if failure != nil {
		// result::err(error): invalid-params (0) or not-found (1).
		putU8(area, 0, 1)
		putU8(area, 4, failure.kind)
		putString(area, 8, failure.message)
		return address(area)
	}
	contents := block(contentSize)
	// content::text (0) with the text at 8; no annotations, no _meta.
	putString(contents, 8, result.text)
	putU32(area, 4, address(contents))
	putU32(area, 8, 1)
	putOptionString(area, 12, result.structured)
	if result.isError {
		putU8(area, 24, 1)
	}
	return address(area)
}

// The views, as `resource` records: the URI, name, MIME type and
// `_meta`; no title, description, size, annotations or icons.
//
//go:wasmexport wasm-mcp:plugin/resources@0.1.0#list-resources
func listResources() uint32 {
	list := block(resourceSize * len(views))
	for i, v := range views {
		base := unsafe.Add(list, i*resourceSize)
		putString(base, 0, v.uri)
		putString(base, 8, v.name)
		mime := ViewMIMEType
		putOptionString(base, 40, &mime)
		putOptionString(base, 128, v.meta)
	}
	returnArea[0] = address(list)
	returnArea[1] = uint32(len(views))
	return address(unsafe.Pointer(&returnArea))
}

//go:wasmexport wasm-mcp:plugin/resources@0.1.0#list-resource-templates
func listResourceTemplates() uint32 {
	returnArea[0] = 0
	returnArea[1] = 0
	return address(unsafe.Pointer(&returnArea))
}

//go:wasmexport wasm-mcp:plugin/resources@0.1.0#read-resource
func readResource(uriPtr, uriLen uint32) uint32 {
	returnArea = [10]uint32{}
	area := unsafe.Pointer(&returnArea)
	uri := argument(uriPtr, uriLen)
	v, ok := viewByURI[uri]
	if !ok {
		// result::err(error::not-found (1)).
		putU8(area, 0, 1)
		putU8(area, 4, 1)
		putString(area, 8, "no resource "+uri)
		return address(area)
	}
	contents := block(resourceContentsSize)
	putString(contents, 0, v.uri)
	mime := ViewMIMEType
	putOptionString(contents, 8, &mime)
	// resource-body::text (0) with the text at 24.
	putString(contents, 24, v.html)
	putOptionString(contents, 32, v.meta)
	putU32(area, 4, address(contents))
	putU32(area, 8, 1)
	return address(area)
}
