//! Plugins' own data: the stores behind `wasi:keyvalue` (SQLite on one
//! machine; PostgreSQL, shared by replicas, in `crate::cluster`) and each
//! tenant's folders, for `wasm-mcp tenant`.
//!
//! Both stores keep the same data the same way:
//!
//! - one row per key: `(tenant, plugin, bucket, key)` is its primary key
//!   (so one tenant's rows, and one namespace's, are one index range),
//!   `value` its bytes, `version` a number drawn from one counter for the
//!   whole store, new at every write of the key and never given twice (a
//!   key deleted and set again has a version it never had: compare-and-swap
//!   sees no ABA). Keys sort in byte order (`list-keys` pages by the last
//!   key given).
//! - one usage row per namespace `(tenant, plugin)`: its keys and bytes
//!   (a key counts its bucket's name, its own and its value's bytes),
//!   changed in the transaction of every write. A write that would take a
//!   namespace over its [`Quota`] (`[limits] keyvalue_keys`, `keyvalue_mb`)
//!   fails whole, writing nothing ([`StoreError::Full`]); one that shrinks
//!   a namespace already over (the limit was lowered) is let through.
//!
//! Every operation is one transaction: a batch is all or nothing. The
//! runtime checks the bounds a plugin could break (key and value sizes,
//! page and batch sizes) before it asks; the stores check the quota.

pub mod folders;
pub mod sqlite;

#[cfg(test)]
pub(crate) mod contract;

pub use sqlite::SqliteStore;

use crate::runtime::keyvalue::{Quota, StoreError};

/// The bytes a key takes in its namespace's usage: its bucket's name,
/// its own and its value's.
pub(crate) fn entry_bytes(bucket: &str, key: &str, value_len: usize) -> u64 {
    (bucket.len() + key.len() + value_len) as u64
}

/// The entries of a batch with each key once, the last value given for it
/// kept (as if written in turn).
pub(crate) fn last_of_each(entries: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<(String, Vec<u8>)> = entries
        .into_iter()
        .rev()
        .filter(|(key, _)| seen.insert(key.clone()))
        .collect();
    kept.reverse();
    kept
}

/// The keys of a batch, each once.
pub(crate) fn each_once(keys: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    keys.into_iter()
        .filter(|k| seen.insert(k.clone()))
        .collect()
}

/// Whether a namespace holding `keys` and `bytes` may change by
/// `more_keys` and `more_bytes` under `quota`: a change that grows it
/// past a limit is refused, naming the limit and its config key.
pub(crate) fn within_quota(
    quota: Quota,
    (keys, bytes): (u64, u64),
    (more_keys, more_bytes): (i64, i64),
) -> Result<(u64, u64), StoreError> {
    let after_keys = keys.saturating_add_signed(more_keys);
    let after_bytes = bytes.saturating_add_signed(more_bytes);
    if more_keys > 0 && after_keys > quota.max_keys {
        return Err(StoreError::Full(format!(
            "the write would make this plugin's key-value data of the tenant {after_keys} keys, \
             over its limit of {} keys ([limits] keyvalue_keys); nothing was written",
            quota.max_keys
        )));
    }
    if more_bytes > 0 && after_bytes > quota.max_bytes {
        return Err(StoreError::Full(format!(
            "the write would make this plugin's key-value data of the tenant {after_bytes} bytes \
             of keys and values, over its limit of {} bytes ([limits] keyvalue_mb); nothing was \
             written",
            quota.max_bytes
        )));
    }
    Ok((after_keys, after_bytes))
}

/// The value `increment` leaves at `key`: `old` (a decimal integer, or
/// absent: 0) plus `delta`.
pub(crate) fn incremented(key: &str, old: Option<&[u8]>, delta: i64) -> Result<i64, StoreError> {
    let current = match old {
        None => 0,
        Some(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
            .ok_or_else(|| {
                StoreError::NotANumber(format!(
                    "the value of key {:?} is not a decimal integer, so it cannot be incremented",
                    crate::text::head(key, 80)
                ))
            })?,
    };
    current.checked_add(delta).ok_or_else(|| {
        StoreError::NotANumber(format!(
            "adding {delta} to {current} (key {:?}) overflows a 64-bit integer",
            crate::text::head(key, 80)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_the_last_value_of_a_key() {
        let kept = last_of_each(vec![
            ("a".into(), b"1".to_vec()),
            ("b".into(), b"2".to_vec()),
            ("a".into(), b"3".to_vec()),
        ]);
        assert_eq!(
            kept,
            [("b".into(), b"2".to_vec()), ("a".into(), b"3".to_vec())]
        );
        assert_eq!(
            each_once(vec!["x".into(), "x".into(), "y".into()]),
            ["x", "y"]
        );
    }

    #[test]
    fn quota_refuses_growth_past_a_limit_only() {
        let quota = Quota {
            max_keys: 2,
            max_bytes: 10,
        };
        assert_eq!(within_quota(quota, (1, 5), (1, 5)), Ok((2, 10)));
        let keys = within_quota(quota, (2, 5), (1, 1)).unwrap_err().to_string();
        assert!(keys.contains("keyvalue_keys"), "{keys}");
        let bytes = within_quota(quota, (1, 5), (0, 6)).unwrap_err().to_string();
        assert!(bytes.contains("keyvalue_mb"), "{bytes}");
        // A namespace over a lowered limit may still shrink.
        assert_eq!(within_quota(quota, (5, 50), (-1, -10)), Ok((4, 40)));
    }

    #[test]
    fn increments_decimal_text_only() {
        assert_eq!(incremented("k", None, 5), Ok(5));
        assert_eq!(incremented("k", Some(b"-7"), 2), Ok(-5));
        assert!(matches!(
            incremented("k", Some(b"seven"), 1),
            Err(StoreError::NotANumber(_))
        ));
        assert!(matches!(
            incremented("k", Some(b"\xff"), 1),
            Err(StoreError::NotANumber(_))
        ));
        assert!(matches!(
            incremented("k", Some(i64::MAX.to_string().as_bytes()), 1),
            Err(StoreError::NotANumber(_))
        ));
    }
}
