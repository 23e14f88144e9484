//! The host functions of `wasi:keyvalue@0.2.0-draft2`: `store`, `atomics`
//! and `batch`, on a view of a store's [`KeyValueState`] and resource
//! table. Each operation is counted and its keys and values checked
//! (see the module above) before the backend is asked.

use super::bindings::wasi::keyvalue::{atomics, batch, store};
use super::state::{check_batch_bytes, other, KeyValueState};
use super::MAX_BATCH_BYTES;
use crate::runtime::state::CallState;
use std::collections::HashSet;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

type Error = store::Error;
type Trap<T> = wasmtime::Result<T>;

/// A bucket a plugin opened: a name inside its namespace.
pub struct Bucket {
    name: String,
}

/// A compare-and-swap handle: the key and the version its value had when
/// the plugin last read it.
pub struct Cas {
    bucket: String,
    key: String,
    version: i64,
}

/// What the host functions work on: the store's key-value state and the
/// resource table its buckets and CAS handles live in.
pub(super) struct KeyValue<'a> {
    pub(super) state: &'a mut KeyValueState,
    pub(super) table: &'a mut ResourceTable,
}

struct HasKeyValue;

impl HasData for HasKeyValue {
    type Data<'a> = KeyValue<'a>;
}

/// Defines `wasi:keyvalue/{store,atomics,batch}@0.2.0-draft2` in `linker`.
pub(in crate::runtime) fn add_to_linker(linker: &mut Linker<CallState>) -> Trap<()> {
    fn view(state: &mut CallState) -> KeyValue<'_> {
        let (state, table) = state.keyvalue();
        KeyValue { state, table }
    }
    store::add_to_linker::<_, HasKeyValue>(linker, view)?;
    atomics::add_to_linker::<_, HasKeyValue>(linker, view)?;
    batch::add_to_linker::<_, HasKeyValue>(linker, view)?;
    Ok(())
}

impl KeyValue<'_> {
    /// The name of an open bucket.
    fn bucket(&self, bucket: &Resource<Bucket>) -> Result<&str, Error> {
        self.table
            .get(bucket)
            .map(|b| b.name.as_str())
            .map_err(|e| other(format!("no such bucket: {e}")))
    }

    /// Puts a new handle in the table, within the handle bound.
    fn push<T: Send + 'static>(&mut self, value: T) -> Result<Resource<T>, Error> {
        self.state.open_handle()?;
        self.table.push(value).map_err(|e| {
            self.state.close_handle();
            other(format!("no room for a handle: {e}"))
        })
    }

    fn open(&mut self, name: String) -> Result<Resource<Bucket>, Error> {
        self.state.charge(1)?;
        self.state.backend()?;
        self.state.check_key("bucket name", &name)?;
        self.push(Bucket { name })
    }

    async fn get(
        &mut self,
        bucket: &Resource<Bucket>,
        key: String,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.state.charge(1)?;
        self.state.check_key("key", &key)?;
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        let mut values = backend
            .get_many(&self.state.namespace, name, std::slice::from_ref(&key))
            .await
            .map_err(|e| self.state.store_error(e))?;
        Ok(values.pop().flatten())
    }

    async fn set(
        &mut self,
        bucket: &Resource<Bucket>,
        key: String,
        value: Vec<u8>,
    ) -> Result<(), Error> {
        self.state.charge(1)?;
        self.state.check_key("key", &key)?;
        self.state.check_value(&value)?;
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        let quota = self.state.bounds.quota;
        backend
            .set_many(&self.state.namespace, name, vec![(key, value)], quota)
            .await
            .map_err(|e| self.state.store_error(e))
    }

    async fn delete(&mut self, bucket: &Resource<Bucket>, key: String) -> Result<(), Error> {
        self.state.charge(1)?;
        self.state.check_key("key", &key)?;
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        backend
            .delete_many(&self.state.namespace, name, vec![key])
            .await
            .map_err(|e| self.state.store_error(e))
    }

    async fn exists(&mut self, bucket: &Resource<Bucket>, key: String) -> Result<bool, Error> {
        self.state.charge(1)?;
        self.state.check_key("key", &key)?;
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        backend
            .exists(&self.state.namespace, name, &key)
            .await
            .map_err(|e| self.state.store_error(e))
    }

    async fn list_keys(
        &mut self,
        bucket: &Resource<Bucket>,
        cursor: Option<String>,
    ) -> Result<store::KeyResponse, Error> {
        self.state.charge(1)?;
        if let Some(cursor) = &cursor {
            self.state.check_key("cursor", cursor)?;
        }
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        let limit = self.state.bounds.page_keys;
        let (keys, cursor) = backend
            .list_keys(&self.state.namespace, name, cursor, limit)
            .await
            .map_err(|e| self.state.store_error(e))?;
        Ok(store::KeyResponse { keys, cursor })
    }

    /// A CAS handle for `key` at its current version.
    async fn cas_at_current(
        &mut self,
        bucket: String,
        key: String,
    ) -> Result<Resource<Cas>, Error> {
        let backend = self.state.backend()?;
        let version = backend
            .get_versioned(&self.state.namespace, &bucket, &key)
            .await
            .map_err(|e| self.state.store_error(e))?
            .version;
        self.push(Cas {
            bucket,
            key,
            version,
        })
    }

    async fn cas_new(
        &mut self,
        bucket: &Resource<Bucket>,
        key: String,
    ) -> Result<Resource<Cas>, Error> {
        self.state.charge(1)?;
        self.state.check_key("key", &key)?;
        let name = self.bucket(bucket)?.to_owned();
        self.cas_at_current(name, key).await
    }

    async fn cas_current(&mut self, cas: &Resource<Cas>) -> Result<Option<Vec<u8>>, Error> {
        self.state.charge(1)?;
        let backend = self.state.backend()?;
        let handle = self
            .table
            .get(cas)
            .map_err(|e| other(format!("no such CAS handle: {e}")))?;
        let read = backend
            .get_versioned(&self.state.namespace, &handle.bucket, &handle.key)
            .await
            .map_err(|e| self.state.store_error(e))?;
        if let Ok(handle) = self.table.get_mut(cas) {
            handle.version = read.version;
        }
        Ok(read.value)
    }

    async fn increment(
        &mut self,
        bucket: &Resource<Bucket>,
        key: String,
        delta: i64,
    ) -> Result<i64, Error> {
        self.state.charge(1)?;
        self.state.check_key("key", &key)?;
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        let quota = self.state.bounds.quota;
        backend
            .increment(&self.state.namespace, name, &key, delta, quota)
            .await
            .map_err(|e| self.state.store_error(e))
    }

    async fn swap(&mut self, cas: Resource<Cas>, value: Vec<u8>) -> Result<(), atomics::CasError> {
        let cas = self.table.delete(cas).map_err(|e| {
            atomics::CasError::StoreError(other(format!("no such CAS handle: {e}")))
        })?;
        self.state.close_handle();
        let store_error = atomics::CasError::StoreError;
        self.state.charge(1).map_err(store_error)?;
        self.state.check_value(&value).map_err(store_error)?;
        let backend = self.state.backend().map_err(store_error)?;
        let quota = self.state.bounds.quota;
        let swapped = backend
            .swap(
                &self.state.namespace,
                &cas.bucket,
                &cas.key,
                cas.version,
                value,
                quota,
            )
            .await
            .map_err(|e| store_error(self.state.store_error(e)))?;
        if swapped {
            return Ok(());
        }
        let fresh = self
            .cas_at_current(cas.bucket, cas.key)
            .await
            .map_err(store_error)?;
        Err(atomics::CasError::CasFailed(fresh))
    }

    async fn get_many(
        &mut self,
        bucket: &Resource<Bucket>,
        keys: Vec<String>,
    ) -> Result<Vec<Option<(String, Vec<u8>)>>, Error> {
        self.state.check_batch(keys.len())?;
        self.state.charge(keys.len())?;
        for key in &keys {
            self.state.check_key("key", key)?;
        }
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        // Asked a few keys at a time, so that what is read never passes
        // the batch bound by more than one chunk.
        let chunk = (MAX_BATCH_BYTES / self.state.bounds.value_bytes.max(1)).max(1);
        let mut bytes = 0usize;
        let mut found = Vec::with_capacity(keys.len());
        for part in keys.chunks(chunk) {
            let values = backend
                .get_many(&self.state.namespace, name, part)
                .await
                .map_err(|e| self.state.store_error(e))?;
            for (key, value) in part.iter().zip(values) {
                bytes += key.len() + value.as_ref().map_or(0, Vec::len);
                found.push(value);
            }
            check_batch_bytes(bytes)?;
        }
        Ok(keys
            .into_iter()
            .zip(found)
            .map(|(key, value)| value.map(|v| (key, v)))
            .collect())
    }

    async fn set_many(
        &mut self,
        bucket: &Resource<Bucket>,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<(), Error> {
        self.state.check_batch(entries.len())?;
        self.state.charge(entries.len())?;
        let mut bytes = 0usize;
        for (key, value) in &entries {
            self.state.check_key("key", key)?;
            self.state.check_value(value)?;
            bytes += key.len() + value.len();
        }
        check_batch_bytes(bytes)?;
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        let quota = self.state.bounds.quota;
        backend
            .set_many(&self.state.namespace, name, last_of_each(entries), quota)
            .await
            .map_err(|e| self.state.store_error(e))
    }

    async fn delete_many(
        &mut self,
        bucket: &Resource<Bucket>,
        keys: Vec<String>,
    ) -> Result<(), Error> {
        self.state.check_batch(keys.len())?;
        self.state.charge(keys.len())?;
        for key in &keys {
            self.state.check_key("key", key)?;
        }
        let backend = self.state.backend()?;
        let name = self.bucket(bucket)?;
        let keys = last_of_each(keys.into_iter().map(|k| (k, ())).collect())
            .into_iter()
            .map(|(k, ())| k)
            .collect();
        backend
            .delete_many(&self.state.namespace, name, keys)
            .await
            .map_err(|e| self.state.store_error(e))
    }
}

/// Each key once, with the last value given for it (a store writing a
/// key twice in one statement may fail).
fn last_of_each<V>(entries: Vec<(String, V)>) -> Vec<(String, V)> {
    let mut seen = HashSet::with_capacity(entries.len());
    let mut kept: Vec<(String, V)> = Vec::with_capacity(entries.len());
    for (key, value) in entries.into_iter().rev() {
        if !seen.contains(key.as_str()) {
            seen.insert(key.clone());
            kept.push((key, value));
        }
    }
    kept.reverse();
    kept
}

impl store::Host for KeyValue<'_> {
    async fn open(&mut self, identifier: String) -> Trap<Result<Resource<Bucket>, Error>> {
        Ok(KeyValue::open(self, identifier))
    }
}

impl store::HostBucket for KeyValue<'_> {
    async fn get(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
    ) -> Trap<Result<Option<Vec<u8>>, Error>> {
        Ok(KeyValue::get(self, &bucket, key).await)
    }

    async fn set(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        value: Vec<u8>,
    ) -> Trap<Result<(), Error>> {
        Ok(KeyValue::set(self, &bucket, key, value).await)
    }

    async fn delete(&mut self, bucket: Resource<Bucket>, key: String) -> Trap<Result<(), Error>> {
        Ok(KeyValue::delete(self, &bucket, key).await)
    }

    async fn exists(&mut self, bucket: Resource<Bucket>, key: String) -> Trap<Result<bool, Error>> {
        Ok(KeyValue::exists(self, &bucket, key).await)
    }

    async fn list_keys(
        &mut self,
        bucket: Resource<Bucket>,
        cursor: Option<String>,
    ) -> Trap<Result<store::KeyResponse, Error>> {
        Ok(KeyValue::list_keys(self, &bucket, cursor).await)
    }

    async fn drop(&mut self, bucket: Resource<Bucket>) -> Trap<()> {
        if self.table.delete(bucket).is_ok() {
            self.state.close_handle();
        }
        Ok(())
    }
}

impl atomics::Host for KeyValue<'_> {
    async fn increment(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        delta: i64,
    ) -> Trap<Result<i64, Error>> {
        Ok(KeyValue::increment(self, &bucket, key, delta).await)
    }

    async fn swap(
        &mut self,
        cas: Resource<Cas>,
        value: Vec<u8>,
    ) -> Trap<Result<(), atomics::CasError>> {
        Ok(KeyValue::swap(self, cas, value).await)
    }
}

impl atomics::HostCas for KeyValue<'_> {
    async fn new(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
    ) -> Trap<Result<Resource<Cas>, Error>> {
        Ok(self.cas_new(&bucket, key).await)
    }

    async fn current(&mut self, cas: Resource<Cas>) -> Trap<Result<Option<Vec<u8>>, Error>> {
        Ok(self.cas_current(&cas).await)
    }

    async fn drop(&mut self, cas: Resource<Cas>) -> Trap<()> {
        if self.table.delete(cas).is_ok() {
            self.state.close_handle();
        }
        Ok(())
    }
}

impl batch::Host for KeyValue<'_> {
    async fn get_many(
        &mut self,
        bucket: Resource<Bucket>,
        keys: Vec<String>,
    ) -> Trap<Result<Vec<Option<(String, Vec<u8>)>>, Error>> {
        Ok(KeyValue::get_many(self, &bucket, keys).await)
    }

    async fn set_many(
        &mut self,
        bucket: Resource<Bucket>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> Trap<Result<(), Error>> {
        Ok(KeyValue::set_many(self, &bucket, key_values).await)
    }

    async fn delete_many(
        &mut self,
        bucket: Resource<Bucket>,
        keys: Vec<String>,
    ) -> Trap<Result<(), Error>> {
        Ok(KeyValue::delete_many(self, &bucket, keys).await)
    }
}
