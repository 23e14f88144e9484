package wasmmcp

// The plugin's key-value store (wasi:keyvalue@0.2.0-draft2: store, atomics,
// batch), where the operator grants it (`[plugins.NAME] keyvalue = true`):
//
//	bucket, err := wasmmcp.OpenBucket("counters")
//	if err != nil { return "", err } // errors.Is(err, wasmmcp.ErrAccessDenied) without the grant
//	defer bucket.Close()
//	err = bucket.Set("greeting", []byte("hello"))
//	value, found, err := bucket.Get("greeting")
//	visits, err := bucket.Increment("visits", 1)
//	_, err = bucket.Update("log", func(old []byte) []byte { return append(old, "ada\n"...) })
//	keys, err := bucket.Keys() // every page
//
// The canonical ABI of those imports is written out here, as abi.go does
// for the exports: each import takes its arguments flat and a pointer to
// where the host writes its result; the host allocates what a result
// points to (lists, strings) through cabi_realloc, in the arena.

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 open
func kvOpen(namePtr, nameLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.get
func kvGet(bucket, keyPtr, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.set
func kvSet(bucket, keyPtr, keyLen, valuePtr, valueLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.delete
func kvDelete(bucket, keyPtr, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.exists
func kvExists(bucket, keyPtr, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.list-keys
func kvListKeys(bucket, hasCursor, cursorPtr, cursorLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [resource-drop]bucket
func kvDropBucket(bucket uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 [static]cas.new
func kvCasNew(bucket, keyPtr, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 [method]cas.current
func kvCasCurrent(cas, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 [resource-drop]cas
func kvDropCas(cas uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 increment
func kvIncrement(bucket, keyPtr, keyLen uint32, delta int64, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 swap
func kvSwap(cas, valuePtr, valueLen, ret uint32)

//go:wasmimport wasi:keyvalue/batch@0.2.0-draft2 get-many
func kvGetMany(bucket, keysPtr, keysLen, ret uint32)

//go:wasmimport wasi:keyvalue/batch@0.2.0-draft2 set-many
func kvSetMany(bucket, pairsPtr, pairsLen, ret uint32)

//go:wasmimport wasi:keyvalue/batch@0.2.0-draft2 delete-many
func kvDeleteMany(bucket, keysPtr, keysLen, ret uint32)

// Where the host writes an import's result: a global, so it never moves;
// the largest result (list-keys', increment's) is 24 bytes, 8-aligned.
var kvReturn [4]uint64

func kvArea() unsafe.Pointer {
	kvReturn = [4]uint64{}
	return unsafe.Pointer(&kvReturn)
}

func getU8(base unsafe.Pointer, offset uintptr) uint8 { return *(*uint8)(unsafe.Add(base, offset)) }

func getU32(base unsafe.Pointer, offset uintptr) uint32 {
	return *(*uint32)(unsafe.Add(base, offset))
}

// getBytes copies the (pointer, length) at `offset` out of the arena.
func getBytes(base unsafe.Pointer, offset uintptr) []byte {
	ptr, length := getU32(base, offset), getU32(base, offset+4)
	if length == 0 {
		return []byte{}
	}
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), length)...)
}

func getString(base unsafe.Pointer, offset uintptr) string { return string(getBytes(base, offset)) }

// stringArg is a string as the ABI passes it: its address and length.
func stringArg(s string) (uint32, uint32) {
	return address(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

func bytesArg(b []byte) (uint32, uint32) {
	if len(b) == 0 {
		return 0, 0
	}
	return address(unsafe.Pointer(unsafe.SliceData(b))), uint32(len(b))
}

// ErrAccessDenied is what the store fails with when the operator has not
// granted this plugin one (`[plugins.NAME] keyvalue = true`); test with
// errors.Is.
var ErrAccessDenied = errors.New("access denied: this plugin has no key-value store " +
	"(the operator grants it with `[plugins.NAME] keyvalue = true`)")

// ErrNoSuchStore is what the store fails with when the host has no store
// of that name.
var ErrNoSuchStore = errors.New("no such key-value store")

// ErrConflict is what Update fails with (wrapped, naming the key) when the
// value changed under each of its attempts.
var ErrConflict = errors.New("the value changed under each attempt to update it")

// StoreError is any other failure of the store, in the host's words (a
// bound reached, a store that is down).
type StoreError struct {
	// Message is the host's text.
	Message string
}

func (e *StoreError) Error() string { return e.Message }

// storeError reads a `wasi:keyvalue/store.error` at `offset`.
func storeError(base unsafe.Pointer, offset uintptr) error {
	switch getU8(base, offset) {
	case 0:
		return ErrNoSuchStore
	case 1:
		return ErrAccessDenied
	default:
		return &StoreError{Message: getString(base, offset+4)}
	}
}

// UpdateAttempts is how many times Update reads and tries again when
// another writer got there first.
const UpdateAttempts = 16

// Bucket is a bucket of the plugin's key-value store: string keys, byte
// values. Close it when done (the host bounds how many are open).
type Bucket struct {
	handle uint32
}

// OpenBucket opens the bucket `name` of this plugin's store (of the
// caller's tenant).
func OpenBucket(name string) (*Bucket, error) {
	area := kvArea()
	p, n := stringArg(name)
	kvOpen(p, n, address(area))
	runtime.KeepAlive(name)
	if getU8(area, 0) != 0 {
		return nil, storeError(area, 4)
	}
	return &Bucket{handle: getU32(area, 4)}, nil
}

// Close gives the bucket back; it may not be used after.
func (b *Bucket) Close() {
	if b.handle != 0 {
		kvDropBucket(b.handle)
		b.handle = 0
	}
}

// Get returns the value of `key`, and whether it has one.
func (b *Bucket) Get(key string) ([]byte, bool, error) {
	area := kvArea()
	p, n := stringArg(key)
	kvGet(b.handle, p, n, address(area))
	runtime.KeepAlive(key)
	return optionBytes(area)
}

// optionBytes reads result<option<list<u8>>, error>.
func optionBytes(area unsafe.Pointer) ([]byte, bool, error) {
	if getU8(area, 0) != 0 {
		return nil, false, storeError(area, 4)
	}
	if getU8(area, 4) == 0 {
		return nil, false, nil
	}
	return getBytes(area, 8), true, nil
}

// unitResult reads result<_, error>.
func unitResult(area unsafe.Pointer) error {
	if getU8(area, 0) != 0 {
		return storeError(area, 4)
	}
	return nil
}

// Set sets `key` to `value`.
func (b *Bucket) Set(key string, value []byte) error {
	area := kvArea()
	kp, kn := stringArg(key)
	vp, vn := bytesArg(value)
	kvSet(b.handle, kp, kn, vp, vn, address(area))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return unitResult(area)
}

// Delete removes `key` (nothing happens when it has no value).
func (b *Bucket) Delete(key string) error {
	area := kvArea()
	p, n := stringArg(key)
	kvDelete(b.handle, p, n, address(area))
	runtime.KeepAlive(key)
	return unitResult(area)
}

// Exists says whether `key` has a value.
func (b *Bucket) Exists(key string) (bool, error) {
	area := kvArea()
	p, n := stringArg(key)
	kvExists(b.handle, p, n, address(area))
	runtime.KeepAlive(key)
	if getU8(area, 0) != 0 {
		return false, storeError(area, 4)
	}
	return getU8(area, 4) != 0, nil
}

// Increment adds `delta` to the number `key` holds (none counts as 0), at
// once, and returns the new number.
func (b *Bucket) Increment(key string, delta int64) (int64, error) {
	area := kvArea()
	p, n := stringArg(key)
	kvIncrement(b.handle, p, n, delta, address(area))
	runtime.KeepAlive(key)
	if getU8(area, 0) != 0 {
		return 0, storeError(area, 8)
	}
	return *(*int64)(unsafe.Add(area, 8)), nil
}

// ListKeys returns one page of keys from `cursor` ("" for the first page)
// and the cursor of the next page ("" after the last).
func (b *Bucket) ListKeys(cursor string) ([]string, string, error) {
	area := kvArea()
	var has uint32
	p, n := stringArg(cursor)
	if cursor != "" {
		has = 1
	}
	kvListKeys(b.handle, has, p, n, address(area))
	runtime.KeepAlive(cursor)
	if getU8(area, 0) != 0 {
		return nil, "", storeError(area, 4)
	}
	list, count := getU32(area, 4), getU32(area, 8)
	keys := make([]string, count)
	for i := range keys {
		keys[i] = getString(unsafe.Pointer(uintptr(list)), uintptr(i)*8)
	}
	next := ""
	if getU8(area, 12) != 0 {
		next = getString(area, 16)
	}
	return keys, next, nil
}

// Keys returns every key of the bucket, fetching page after page.
func (b *Bucket) Keys() ([]string, error) {
	var all []string
	cursor := ""
	for {
		keys, next, err := b.ListKeys(cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, keys...)
		// A page that moves nothing on ends the listing.
		if next == "" || len(keys) == 0 || next == cursor {
			return all, nil
		}
		cursor = next
	}
}

// Cas is a compare-and-swap handle on one key (Bucket.Cas): it remembers
// the value as it was, and Swap writes only if nobody changed it since.
type Cas struct {
	handle uint32
}

// Cas makes a compare-and-swap handle on `key`. Update is the loop most
// callers want.
func (b *Bucket) Cas(key string) (*Cas, error) {
	area := kvArea()
	p, n := stringArg(key)
	kvCasNew(b.handle, p, n, address(area))
	runtime.KeepAlive(key)
	if getU8(area, 0) != 0 {
		return nil, storeError(area, 4)
	}
	return &Cas{handle: getU32(area, 4)}, nil
}

// Current returns the key's value when the handle was made, and whether
// it had one.
func (c *Cas) Current() ([]byte, bool, error) {
	area := kvArea()
	kvCasCurrent(c.handle, address(area))
	return optionBytes(area)
}

// Close gives back a handle that will not be swapped.
func (c *Cas) Close() {
	if c.handle != 0 {
		kvDropCas(c.handle)
		c.handle = 0
	}
}

// Swap writes `value` if the key still holds what Current saw; the handle
// is used up either way. When the value changed it returns a fresh handle
// holding the value as it is now (to try again with), and a nil error;
// on success both are nil.
func (c *Cas) Swap(value []byte) (*Cas, error) {
	area := kvArea()
	p, n := bytesArg(value)
	handle := c.handle
	c.handle = 0
	kvSwap(handle, p, n, address(area))
	runtime.KeepAlive(value)
	if getU8(area, 0) == 0 {
		return nil, nil
	}
	if getU8(area, 4) == 1 { // cas-failed(cas)
		return &Cas{handle: getU32(area, 8)}, nil
	}
	return nil, storeError(area, 8) // store-error(error)
}

// Update replaces the value of `key` with what `change` makes of it (its
// argument is nil when the key has none), safely: when another caller (on
// any replica) wrote the key in between, it reads again and calls `change`
// again, at most UpdateAttempts times, then fails with ErrConflict.
// Returns the value written.
func (b *Bucket) Update(key string, change func(old []byte) []byte) ([]byte, error) {
	cas, err := b.Cas(key)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < UpdateAttempts; attempt++ {
		old, _, err := cas.Current()
		if err != nil {
			cas.Close()
			return nil, err
		}
		value := change(old)
		fresh, err := cas.Swap(value)
		if err != nil {
			return nil, err
		}
		if fresh == nil {
			return value, nil
		}
		cas = fresh
	}
	cas.Close()
	return nil, fmt.Errorf("%w: %q, %d times", ErrConflict, key, UpdateAttempts)
}

// stringList lays out `keys` as list<string>: (pointer, length) pairs.
func stringList(keys []string) (uint32, uint32) {
	if len(keys) == 0 {
		return 0, 0
	}
	list := block(8 * len(keys))
	for i, key := range keys {
		putString(list, uintptr(i)*8, key)
	}
	return address(list), uint32(len(keys))
}

// GetMany returns the values of `keys` in their order (nil for a key
// without one), in one operation.
func (b *Bucket) GetMany(keys []string) ([][]byte, error) {
	area := kvArea()
	p, n := stringList(keys)
	kvGetMany(b.handle, p, n, address(area))
	if getU8(area, 0) != 0 {
		return nil, storeError(area, 4)
	}
	found := map[string][]byte{}
	list, count := unsafe.Pointer(uintptr(getU32(area, 4))), getU32(area, 8)
	for i := uintptr(0); i < uintptr(count); i++ {
		entry := unsafe.Add(list, i*20) // option<tuple<string, list<u8>>>
		if getU8(entry, 0) != 0 {
			found[getString(entry, 4)] = getBytes(entry, 12)
		}
	}
	values := make([][]byte, len(keys))
	for i, key := range keys {
		values[i] = found[key]
	}
	return values, nil
}

// SetMany sets each key of `values` to its value, in one operation.
func (b *Bucket) SetMany(values map[string][]byte) error {
	area := kvArea()
	pairs := block(16 * len(values))
	i := uintptr(0)
	for key, value := range values {
		putString(pairs, i*16, key)
		keep = append(keep, value)
		vp, vn := bytesArg(value)
		putU32(pairs, i*16+8, vp)
		putU32(pairs, i*16+12, vn)
		i++
	}
	kvSetMany(b.handle, address(pairs), uint32(len(values)), address(area))
	return unitResult(area)
}

// DeleteMany removes each of `keys`, in one operation.
func (b *Bucket) DeleteMany(keys []string) error {
	area := kvArea()
	p, n := stringList(keys)
	kvDeleteMany(b.handle, p, n, address(area))
	return unitResult(area)
}
