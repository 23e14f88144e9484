//! A hostile plugin for the key-value store's bounds
//! (tests/test_keyvalue_bounds.py): each tool attacks the host through the
//! raw `wasi:keyvalue@0.2.0-draft2` bindings (huge keys and values, a
//! million keys, a tight loop of writes, leaked handles, keys and bucket
//! names meant to escape) and reports where it was stopped. A tool's error
//! is the host's refusal, word for word. Never load it in production.

use wasm_mcp_sdk::bindings::wasi::keyvalue::{batch, store};
use wasm_mcp_sdk::prelude::*;

type Outcome = Result<String, String>;

#[derive(Deserialize, JsonSchema)]
struct Size {
    /// Bytes.
    bytes: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Count {
    count: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Entry {
    bucket: String,
    key: String,
    value: String,
}

#[derive(Deserialize, JsonSchema)]
struct Where {
    bucket: String,
    key: String,
}

#[derive(Deserialize, JsonSchema)]
struct Bucket {
    bucket: String,
}

fn refused(error: store::Error) -> String {
    match error {
        store::Error::NoSuchStore => "no-such-store".into(),
        store::Error::AccessDenied => "access-denied".into(),
        store::Error::Other(text) => text,
    }
}

fn open(name: &str) -> Result<store::Bucket, String> {
    store::open(name).map_err(refused)
}

/// Sets a key of `bytes` bytes.
fn huge_key(s: Size) -> Outcome {
    let key = "k".repeat(s.bytes as usize);
    open("b")?.set(&key, b"v").map_err(refused)?;
    Ok("stored".into())
}

/// Sets a value of `bytes` bytes.
fn huge_value(s: Size) -> Outcome {
    let value = vec![7u8; s.bytes as usize];
    open("b")?.set("k", &value).map_err(refused)?;
    Ok("stored".into())
}

/// Writes `count` distinct keys, a batch at a time (the largest the host
/// takes), until the host says no.
fn fill(c: Count) -> Outcome {
    let bucket = open("fill")?;
    let mut written = 0u64;
    let mut size = 1000u64;
    while written < c.count {
        let n = size.min(c.count - written);
        let entries: Vec<(String, Vec<u8>)> = (written..written + n)
            .map(|i| (format!("key-{i:08}"), b"x".to_vec()))
            .collect();
        match batch::set_many(&bucket, &entries) {
            Ok(()) => written += n,
            // Over the batch bound: smaller batches; anything else stops it.
            Err(store::Error::Other(t)) if t.contains("keyvalue_page_keys") && size > 1 => {
                size /= 2
            }
            Err(e) => return Err(format!("wrote {written} keys, then: {}", refused(e))),
        }
    }
    Ok(format!("wrote {written} keys"))
}

/// Sets one key `count` times in a tight loop.
fn hammer(c: Count) -> Outcome {
    let bucket = open("hammer")?;
    for i in 0..c.count {
        if let Err(e) = bucket.set("k", i.to_string().as_bytes()) {
            return Err(format!("wrote {i} times, then: {}", refused(e)));
        }
    }
    Ok(format!("wrote {} times", c.count))
}

/// Opens buckets and never drops them, `count` times.
fn leak(c: Count) -> Outcome {
    for i in 0..c.count {
        match store::open("leak") {
            Ok(bucket) => std::mem::forget(bucket),
            Err(e) => return Err(format!("opened {i}, then: {}", refused(e))),
        }
    }
    Ok(format!("opened {}", c.count))
}

/// A batch of `count` keys in one call.
fn huge_batch(c: Count) -> Outcome {
    let bucket = open("b")?;
    let entries: Vec<(String, Vec<u8>)> = (0..c.count)
        .map(|i| (format!("k{i}"), Vec::new()))
        .collect();
    batch::set_many(&bucket, &entries).map_err(refused)?;
    Ok("stored".into())
}

/// A get-many of every key `fill` wrote, `count` of them.
fn read_many(c: Count) -> Outcome {
    let bucket = open("fill")?;
    let keys: Vec<String> = (0..c.count).map(|i| format!("key-{i:08}")).collect();
    let found = batch::get_many(&bucket, &keys).map_err(refused)?;
    Ok(format!("{} found", found.iter().flatten().count()))
}

fn put(e: Entry) -> Outcome {
    open(&e.bucket)?
        .set(&e.key, e.value.as_bytes())
        .map_err(refused)?;
    Ok("stored".into())
}

fn get(w: Where) -> Outcome {
    let value = open(&w.bucket)?.get(&w.key).map_err(refused)?;
    Ok(value.map_or("(none)".into(), |v| {
        String::from_utf8_lossy(&v).into_owned()
    }))
}

/// Every key of a bucket, page by page.
fn keys(b: Bucket) -> Outcome {
    let bucket = open(&b.bucket)?;
    let (mut all, mut cursor) = (Vec::new(), None);
    loop {
        let page = bucket.list_keys(cursor.as_deref()).map_err(refused)?;
        all.extend(page.keys);
        cursor = page.cursor;
        if cursor.is_none() {
            return Ok(all.join("\n"));
        }
    }
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool("huge_key", "Sets a key of `bytes` bytes", huge_key)
        .tool("huge_value", "Sets a value of `bytes` bytes", huge_value)
        .tool("fill", "Writes `count` keys in batches", fill)
        .tool("hammer", "Sets one key `count` times", hammer)
        .tool("leak", "Opens `count` buckets, dropping none", leak)
        .tool("huge_batch", "Sets `count` keys in one batch", huge_batch)
        .tool(
            "read_many",
            "Reads `count` of fill's keys at once",
            read_many,
        )
        .tool("put", "Sets a key in a bucket", put)
        .tool("get", "Reads a key from a bucket", get)
        .tool("keys", "Lists a bucket's keys", keys)
}

export_plugin!(plugin);
