// A test fixture: the key-value store through the Go helper (wasmmcp's
// Bucket). The same tools as kv-rust, kv-js and kv-c, for
// tests/test_keyvalue_sdks.py.
package main

import (
	"strconv"
	"strings"

	"wasmmcp"
)

func main() {}

type Key struct {
	Key string `json:"key" description:"The key."`
}

type KeyValue struct {
	Key   string `json:"key" description:"The key."`
	Value string `json:"value" description:"The value (text)."`
}

// with runs `f` on the bucket, closed after.
func with(f func(*wasmmcp.Bucket) (string, error)) (string, error) {
	bucket, err := wasmmcp.OpenBucket("counter")
	if err != nil {
		return "", err
	}
	defer bucket.Close()
	return f(bucket)
}

func init() {
	wasmmcp.Tool("go_put", "Sets a key", func(a KeyValue) (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) { return "ok", b.Set(a.Key, []byte(a.Value)) })
	})
	wasmmcp.Tool("go_get", "Reads a key", func(a Key) (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) {
			value, found, err := b.Get(a.Key)
			if !found {
				return "(none)", err
			}
			return string(value), err
		})
	})
	wasmmcp.Tool("go_count", "Adds one to a key", func(a Key) (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) {
			n, err := b.Increment(a.Key, 1)
			return strconv.FormatInt(n, 10), err
		})
	})
	wasmmcp.Tool("go_append", "Appends to a key's value", func(a KeyValue) (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) {
			value, err := b.Update(a.Key, func(old []byte) []byte { return append(old, a.Value...) })
			return string(value), err
		})
	})
	wasmmcp.Tool("go_keys", "Lists every key", func() (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) {
			keys, err := b.Keys()
			return strings.Join(keys, "\n"), err
		})
	})
	wasmmcp.Tool("go_remove", "Removes a key; says whether it still exists", func(a Key) (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) {
			if err := b.Delete(a.Key); err != nil {
				return "", err
			}
			exists, err := b.Exists(a.Key)
			return strconv.FormatBool(exists), err
		})
	})
	wasmmcp.Tool("go_batch", "Sets, reads and removes comma-separated keys at once", func(a KeyValue) (string, error) {
		return with(func(b *wasmmcp.Bucket) (string, error) {
			keys := strings.Split(a.Key, ",")
			values := map[string][]byte{}
			for _, k := range keys {
				values[k] = []byte(k + "=" + a.Value)
			}
			if err := b.SetMany(values); err != nil {
				return "", err
			}
			read, err := b.GetMany(keys)
			if err != nil {
				return "", err
			}
			if err := b.DeleteMany(keys); err != nil {
				return "", err
			}
			out := make([]string, len(read))
			for i, v := range read {
				out[i] = "(none)"
				if v != nil {
					out[i] = string(v)
				}
			}
			return strings.Join(out, ","), nil
		})
	})
}
