//! A test fixture: the key-value store through the Rust SDK's helper
//! (`wasm_mcp_sdk::keyvalue`). The same tools as kv-js, kv-go and kv-c, for
//! tests/test_keyvalue_sdks.py: put, get, count (increment), append (a
//! compare-and-swap loop), keys (every page), remove (delete, then exists)
//! and batch (set-many, get-many, delete-many).

use wasm_mcp_sdk::keyvalue::{Bucket, Error};
use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Key {
    /// The key.
    key: String,
}

#[derive(Deserialize, JsonSchema)]
struct KeyValue {
    /// The key.
    key: String,
    /// The value (text).
    value: String,
}

fn bucket() -> Result<Bucket, Error> {
    Bucket::open("counter")
}

fn put(a: KeyValue) -> Result<String, Error> {
    bucket()?.set(&a.key, &a.value)?;
    Ok("ok".into())
}

fn get(a: Key) -> Result<String, Error> {
    Ok(bucket()?
        .get_string(&a.key)?
        .unwrap_or_else(|| "(none)".into()))
}

fn count(a: Key) -> Result<String, Error> {
    Ok(bucket()?.increment(&a.key, 1)?.to_string())
}

fn append(a: KeyValue) -> Result<String, Error> {
    let new = bucket()?.update(&a.key, |old| {
        let mut value = old.map(<[u8]>::to_vec).unwrap_or_default();
        value.extend_from_slice(a.value.as_bytes());
        value
    })?;
    Ok(String::from_utf8_lossy(&new).into_owned())
}

fn keys() -> Result<String, Error> {
    let keys: Vec<String> = bucket()?.keys().collect::<Result<_, _>>()?;
    Ok(keys.join("\n"))
}

fn remove(a: Key) -> Result<String, Error> {
    let bucket = bucket()?;
    bucket.delete(&a.key)?;
    Ok(bucket.exists(&a.key)?.to_string())
}

/// set-many of `KEY=x` for each key given, get-many of them, then
/// delete-many: the values read, in order.
fn batch(a: KeyValue) -> Result<String, Error> {
    let bucket = bucket()?;
    let keys: Vec<&str> = a.key.split(',').collect();
    bucket.set_many(keys.iter().map(|k| (*k, format!("{k}={}", a.value))))?;
    let values = bucket.get_many(&keys)?;
    bucket.delete_many(&keys)?;
    let values: Vec<String> = values
        .into_iter()
        .map(|v| {
            v.map_or("(none)".into(), |v| {
                String::from_utf8_lossy(&v).into_owned()
            })
        })
        .collect();
    Ok(values.join(","))
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool("rust_put", "Sets a key", put)
        .tool("rust_get", "Reads a key", get)
        .tool("rust_count", "Adds one to a key", count)
        .tool("rust_append", "Appends to a key's value", append)
        .tool("rust_keys", "Lists every key", |(): ()| keys())
        .tool(
            "rust_remove",
            "Removes a key; says whether it still exists",
            remove,
        )
        .tool(
            "rust_batch",
            "Sets, reads and removes comma-separated keys at once",
            batch,
        )
}

export_plugin!(plugin);
