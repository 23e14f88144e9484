//! The plugin's key-value store (`wasi:keyvalue@0.2.0-draft2`): buckets of
//! byte values by string key, kept by the host for this plugin and the
//! caller's tenant, across calls, restarts and replicas.
//!
//! The operator grants it (`[plugins.NAME] keyvalue = true`); without the
//! grant [`Bucket::open`] fails with [`Error::AccessDenied`].
//!
//! ```ignore
//! use wasm_mcp_sdk::keyvalue::Bucket;
//!
//! let bucket = Bucket::open("counters")?;
//! bucket.set("greeting", "hello")?;
//! assert_eq!(bucket.get("greeting")?.as_deref(), Some(&b"hello"[..]));
//! let visits = bucket.increment("visits", 1)?;
//! // Read-modify-write that is safe against every other caller and replica:
//! bucket.update("names", |old| {
//!     let mut names = old.map(<[u8]>::to_vec).unwrap_or_default();
//!     names.extend_from_slice(b"ada\n");
//!     names
//! })?;
//! for key in bucket.keys() {
//!     println!("{}", key?);
//! }
//! ```
//!
//! Every operation is atomic on its own. The host bounds keys, values,
//! the number and bytes of keys, page sizes and operations per call; an
//! operation past a bound fails with [`Error::Other`] saying which.

use crate::bindings::wasi::keyvalue::{atomics, batch, store};

/// What a store operation failed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The plugin may not use the store: the operator did not grant it
    /// (`[plugins.NAME] keyvalue = true`).
    AccessDenied,
    /// The host has no store of that name.
    NoSuchStore,
    /// [`Bucket::update`] found the value changed under it on every one
    /// of its attempts.
    Conflict {
        /// The key it tried to update.
        key: String,
        /// How many times it tried.
        attempts: u32,
    },
    /// Anything else, in the host's words (a bound reached, a store that
    /// is down, ...).
    Other(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::AccessDenied => f.write_str(
                "access denied: this plugin has no key-value store \
                 (the operator grants it with `[plugins.NAME] keyvalue = true`)",
            ),
            Error::NoSuchStore => f.write_str("no such key-value store"),
            Error::Conflict { key, attempts } => write!(
                f,
                "the value of {key:?} changed under each of {attempts} attempts to update it"
            ),
            Error::Other(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

impl From<store::Error> for Error {
    fn from(error: store::Error) -> Self {
        match error {
            store::Error::AccessDenied => Error::AccessDenied,
            store::Error::NoSuchStore => Error::NoSuchStore,
            store::Error::Other(text) => Error::Other(text),
        }
    }
}

/// A store operation's result.
pub type Result<T> = std::result::Result<T, Error>;

/// How many times [`Bucket::update`] reads and tries again when another
/// writer got there first.
pub const UPDATE_ATTEMPTS: u32 = 16;

/// A bucket of the plugin's store: string keys, byte values.
#[derive(Debug)]
pub struct Bucket {
    raw: store::Bucket,
}

impl Bucket {
    /// Opens the bucket `name` (made on first write). Buckets of one
    /// plugin and tenant share nothing with another plugin's or tenant's.
    ///
    /// ```ignore
    /// let notes = Bucket::open("notes")?;
    /// ```
    pub fn open(name: &str) -> Result<Bucket> {
        Ok(Bucket {
            raw: store::open(name)?,
        })
    }

    /// The value of `key`, or `None` when it has none.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.raw.get(key)?)
    }

    /// The value of `key` as UTF-8 text (lossily), or `None`.
    pub fn get_string(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .get(key)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// The value of `key` read as JSON into `T`, or `None`. A value that
    /// is not such JSON is [`Error::Other`].
    pub fn get_json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self.get(key)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                Error::Other(format!("the value of {key:?} is not the JSON wanted: {e}"))
            }),
        }
    }

    /// Sets `key` to `value` (bytes or text).
    pub fn set(&self, key: &str, value: impl AsRef<[u8]>) -> Result<()> {
        Ok(self.raw.set(key, value.as_ref())?)
    }

    /// Sets `key` to `value` written as JSON.
    pub fn set_json<T: serde::Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| Error::Other(format!("writing {key:?} as JSON: {e}")))?;
        self.set(key, bytes)
    }

    /// Removes `key`; nothing happens when it has no value.
    pub fn delete(&self, key: &str) -> Result<()> {
        Ok(self.raw.delete(key)?)
    }

    /// Whether `key` has a value.
    pub fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.raw.exists(key)?)
    }

    /// Adds `delta` to the number `key` holds (none counts as 0), at
    /// once, and returns the new number.
    ///
    /// ```ignore
    /// let visits = Bucket::open("stats")?.increment("visits", 1)?;
    /// ```
    pub fn increment(&self, key: &str, delta: i64) -> Result<i64> {
        Ok(atomics::increment(&self.raw, key, delta)?)
    }

    /// Replaces the value of `key` with what `change` makes of it (its
    /// argument is `None` when the key has none), safely: when another
    /// caller (on any replica) wrote the key in between, it reads again
    /// and calls `change` again, at most [`UPDATE_ATTEMPTS`] times, then
    /// fails with [`Error::Conflict`]. Returns the value written.
    ///
    /// ```ignore
    /// bucket.update("count", |old| {
    ///     let n: u64 = old.and_then(|b| std::str::from_utf8(b).ok()?.parse().ok()).unwrap_or(0);
    ///     (n + 1).to_string().into_bytes()
    /// })?;
    /// ```
    pub fn update(
        &self,
        key: &str,
        mut change: impl FnMut(Option<&[u8]>) -> Vec<u8>,
    ) -> Result<Vec<u8>> {
        let mut cas = self.cas(key)?;
        for _ in 0..UPDATE_ATTEMPTS {
            let new = change(cas.current()?.as_deref());
            match cas.swap(&new) {
                Ok(()) => return Ok(new),
                Err(CasError::Changed(fresh)) => cas = fresh,
                Err(CasError::Store(e)) => return Err(e),
            }
        }
        Err(Error::Conflict {
            key: key.to_owned(),
            attempts: UPDATE_ATTEMPTS,
        })
    }

    /// A compare-and-swap handle on `key`: it remembers the value as it
    /// is now, and [`Cas::swap`] writes only if nobody changed it since.
    /// [`Bucket::update`] is the loop most callers want.
    pub fn cas(&self, key: &str) -> Result<Cas> {
        Ok(Cas {
            raw: atomics::Cas::new(&self.raw, key)?,
        })
    }

    /// One page of keys, from `cursor` (`None`: the first page), and the
    /// cursor of the next page (`None`: this was the last).
    pub fn list_keys(&self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>)> {
        let page = self.raw.list_keys(cursor)?;
        Ok((page.keys, page.cursor))
    }

    /// Every key of the bucket, page by page as the iteration goes.
    ///
    /// ```ignore
    /// let keys: Vec<String> = bucket.keys().collect::<Result<_, _>>()?;
    /// ```
    pub fn keys(&self) -> Keys<'_> {
        Keys {
            bucket: self,
            page: Vec::new().into_iter(),
            next: Some(None),
        }
    }

    /// The values of `keys`, in their order (`None` for a key without
    /// one), in one operation.
    pub fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        let asked: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        let found = batch::get_many(&self.raw, &asked)?;
        let mut values = vec![None; keys.len()];
        for (key, value) in found.into_iter().flatten() {
            if let Some(i) = keys.iter().position(|k| *k == key) {
                values[i] = Some(value);
            }
        }
        Ok(values)
    }

    /// Sets each `(key, value)` pair, in one operation.
    pub fn set_many<K: Into<String>, V: Into<Vec<u8>>>(
        &self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<()> {
        let pairs: Vec<(String, Vec<u8>)> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        Ok(batch::set_many(&self.raw, &pairs)?)
    }

    /// Removes each of `keys`, in one operation.
    pub fn delete_many(&self, keys: &[&str]) -> Result<()> {
        let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        Ok(batch::delete_many(&self.raw, &keys)?)
    }
}

/// The keys of a bucket ([`Bucket::keys`]), fetched a page at a time.
pub struct Keys<'a> {
    bucket: &'a Bucket,
    page: std::vec::IntoIter<String>,
    /// The cursor of the next page to fetch: `Some(None)` for the first,
    /// `None` once the last was fetched (or a fetch failed).
    next: Option<Option<String>>,
}

impl Iterator for Keys<'_> {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(key) = self.page.next() {
                return Some(Ok(key));
            }
            let cursor = self.next.take()?;
            match self.bucket.list_keys(cursor.as_deref()) {
                Ok((keys, next)) => {
                    // A page that moves nothing on ends the listing.
                    if next.is_some() && (keys.is_empty() || next == cursor) {
                        self.next = None;
                    } else {
                        self.next = next.map(Some);
                    }
                    self.page = keys.into_iter();
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// A compare-and-swap handle on one key ([`Bucket::cas`]).
#[derive(Debug)]
pub struct Cas {
    raw: atomics::Cas,
}

/// Why [`Cas::swap`] did not write.
#[derive(Debug)]
pub enum CasError {
    /// The value changed since the handle was made; this fresh handle
    /// holds the value as it is now, to try again with.
    Changed(Cas),
    /// The store failed.
    Store(Error),
}

impl std::fmt::Display for CasError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CasError::Changed(_) => f.write_str("the value changed since it was read"),
            CasError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CasError {}

impl Cas {
    /// The value of the key when the handle was made (`None`: it had none).
    pub fn current(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.raw.current()?)
    }

    /// Writes `value` if the key still holds what [`Cas::current`] saw.
    pub fn swap(self, value: impl AsRef<[u8]>) -> std::result::Result<(), CasError> {
        atomics::swap(self.raw, value.as_ref()).map_err(|e| match e {
            atomics::CasError::CasFailed(raw) => CasError::Changed(Cas { raw }),
            atomics::CasError::StoreError(e) => CasError::Store(e.into()),
        })
    }
}
