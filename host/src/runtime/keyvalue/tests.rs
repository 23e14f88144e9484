//! The host functions against a small in-memory store: every bound
//! refused before the store is asked, the operations budget, batches all
//! or none, compare-and-swap losing a race, and no store without a grant.

use super::bindings::wasi::keyvalue::atomics::{CasError, Host as _, HostCas as _};
use super::bindings::wasi::keyvalue::batch::Host as _;
use super::bindings::wasi::keyvalue::store::{Error, Host as _, HostBucket};
use super::host::{Bucket, KeyValue};
use super::*;
use async_trait::async_trait;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use wasmtime::component::{Resource, ResourceTable};

/// One namespace's keys: (bucket, key) to (value, version).
type Data = BTreeMap<(String, String), (Vec<u8>, i64)>;

/// A store in memory, counting the calls it is asked.
#[derive(Default)]
struct Memory {
    data: Mutex<HashMap<Namespace, Data>>,
    version: Mutex<i64>,
    calls: AtomicUsize,
}

impl Memory {
    fn asked(&self) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst);
        0
    }

    fn next_version(&self) -> i64 {
        let mut v = self.version.lock();
        *v += 1;
        *v
    }

    fn keys(&self, ns: &Namespace) -> usize {
        self.data.lock().get(ns).map_or(0, BTreeMap::len)
    }

    /// Writes `entries` if the namespace stays within `quota`.
    fn write(
        &self,
        ns: &Namespace,
        bucket: &str,
        entries: Vec<(String, Vec<u8>)>,
        quota: Quota,
    ) -> Result<(), StoreError> {
        let mut all = self.data.lock();
        let mut data = all.get(ns).cloned().unwrap_or_default();
        for (key, value) in entries {
            data.insert((bucket.to_owned(), key), (value, self.next_version()));
        }
        let bytes: usize = data.iter().map(|((_, k), (v, _))| k.len() + v.len()).sum();
        if data.len() as u64 > quota.max_keys || bytes as u64 > quota.max_bytes {
            return Err(StoreError::Full(format!(
                "over the quota of {} keys",
                quota.max_keys
            )));
        }
        all.insert(ns.clone(), data);
        Ok(())
    }
}

#[async_trait]
impl Backend for Memory {
    async fn get_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.asked();
        let all = self.data.lock();
        Ok(keys
            .iter()
            .map(|k| {
                all.get(ns)
                    .and_then(|d| d.get(&(bucket.to_owned(), k.clone())))
                    .map(|(v, _)| v.clone())
            })
            .collect())
    }

    async fn get_versioned(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
    ) -> Result<Versioned, StoreError> {
        self.asked();
        let all = self.data.lock();
        let found = all
            .get(ns)
            .and_then(|d| d.get(&(bucket.to_owned(), key.to_owned())));
        Ok(Versioned {
            value: found.map(|(v, _)| v.clone()),
            version: found.map_or(0, |(_, n)| *n),
        })
    }

    async fn set_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        entries: Vec<(String, Vec<u8>)>,
        quota: Quota,
    ) -> Result<(), StoreError> {
        self.asked();
        self.write(ns, bucket, entries, quota)
    }

    async fn delete_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: Vec<String>,
    ) -> Result<(), StoreError> {
        self.asked();
        if let Some(data) = self.data.lock().get_mut(ns) {
            for key in keys {
                data.remove(&(bucket.to_owned(), key));
            }
        }
        Ok(())
    }

    async fn exists(&self, ns: &Namespace, bucket: &str, key: &str) -> Result<bool, StoreError> {
        Ok(self.get_versioned(ns, bucket, key).await?.value.is_some())
    }

    async fn list_keys(
        &self,
        ns: &Namespace,
        bucket: &str,
        after: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>), StoreError> {
        self.asked();
        let all = self.data.lock();
        let keys: Vec<String> = all
            .get(ns)
            .into_iter()
            .flat_map(|d| d.keys())
            .filter(|(b, k)| b == bucket && after.as_ref().is_none_or(|a| k > a))
            .map(|(_, k)| k.clone())
            .take(limit)
            .collect();
        let cursor = (keys.len() == limit)
            .then(|| keys.last().cloned())
            .flatten();
        Ok((keys, cursor))
    }

    async fn increment(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
        delta: i64,
        quota: Quota,
    ) -> Result<i64, StoreError> {
        let current = self.get_versioned(ns, bucket, key).await?.value;
        let n = match current {
            None => 0,
            Some(v) => std::str::from_utf8(&v)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| StoreError::NotANumber("not a decimal integer".into()))?,
        };
        let sum = n
            .checked_add(delta)
            .ok_or_else(|| StoreError::NotANumber("overflow".into()))?;
        self.write(
            ns,
            bucket,
            vec![(key.to_owned(), sum.to_string().into_bytes())],
            quota,
        )?;
        Ok(sum)
    }

    async fn swap(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
        version: i64,
        value: Vec<u8>,
        quota: Quota,
    ) -> Result<bool, StoreError> {
        if self.get_versioned(ns, bucket, key).await?.version != version {
            return Ok(false);
        }
        self.write(ns, bucket, vec![(key.to_owned(), value)], quota)?;
        Ok(true)
    }

    async fn usage(&self) -> Result<Vec<Usage>, StoreError> {
        Ok(Vec::new())
    }

    async fn export(&self, _: &str, _: u64) -> Result<Vec<Entry>, StoreError> {
        Ok(Vec::new())
    }

    async fn delete_tenant(&self, _: &str) -> Result<(u64, u64), StoreError> {
        Ok((0, 0))
    }
}

fn bounds() -> Bounds {
    Bounds {
        key_bytes: 16,
        value_bytes: 64,
        quota: Quota {
            max_keys: 10,
            max_bytes: 1 << 20,
        },
        page_keys: 4,
        ops_per_call: 100,
    }
}

fn namespace(tenant: &str) -> Namespace {
    Namespace {
        plugin: "kv".into(),
        tenant: tenant.into(),
    }
}

/// A store's key-value state and table, granted `memory` (or not).
struct Store {
    state: KeyValueState,
    table: ResourceTable,
}

impl Store {
    fn new(memory: Option<&Arc<Memory>>, tenant: &str, bounds: Bounds) -> Self {
        let grant = memory.map(|m| KeyValueGrant {
            backend: m.clone() as Arc<dyn Backend>,
        });
        Store {
            state: KeyValueState::new(namespace(tenant), grant, bounds),
            table: ResourceTable::new(),
        }
    }

    fn kv(&mut self) -> KeyValue<'_> {
        KeyValue {
            state: &mut self.state,
            table: &mut self.table,
        }
    }

    async fn open(&mut self, name: &str) -> Resource<Bucket> {
        let bucket = self.kv().open(name.into()).await.unwrap();
        bucket.unwrap_or_else(|e| panic!("open {name:?}: {e:?}"))
    }
}

/// A borrow of `bucket`, as the guest passes one.
fn b(bucket: &Resource<Bucket>) -> Resource<Bucket> {
    Resource::new_borrow(bucket.rep())
}

fn text(result: wasmtime::Result<Result<impl std::fmt::Debug, Error>>) -> String {
    match result.expect("never a trap") {
        Err(Error::Other(text)) => text,
        other => panic!("expected error::other, got {other:?}"),
    }
}

#[tokio::test]
async fn without_a_grant_open_is_access_denied() {
    let mut store = Store::new(None, "a", bounds());
    for _ in 0..3 {
        let opened = store.kv().open("b".into()).await.unwrap();
        assert!(matches!(opened, Err(Error::AccessDenied)), "{opened:?}");
    }
    assert_eq!(store.state.handles, 0);
}

#[tokio::test]
async fn keys_and_bucket_names_are_refused_at_their_bound_before_the_store_is_asked() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(Some(&memory), "a", bounds());
    let bucket = store.open("b").await;
    let long = "k".repeat(17);
    assert!(text(store.kv().get(b(&bucket), long.clone()).await).contains("keyvalue_key_bytes"));
    assert!(text(store.kv().set(b(&bucket), long.clone(), vec![]).await).contains("17 bytes"));
    assert!(text(store.kv().set(b(&bucket), "".into(), vec![]).await).contains("empty"));
    assert!(text(store.kv().set(b(&bucket), "a\0b".into(), vec![]).await).contains("NUL"));
    assert!(text(store.kv().exists(b(&bucket), "\0".into()).await).contains("NUL"));
    assert!(text(store.kv().delete(b(&bucket), long.clone()).await).contains("keyvalue_key_bytes"));
    assert!(
        text(store.kv().increment(b(&bucket), long.clone(), 1).await)
            .contains("keyvalue_key_bytes")
    );
    assert!(text(store.kv().list_keys(b(&bucket), Some(long.clone())).await).contains("cursor"));
    assert!(
        text(store.kv().set(b(&bucket), "k".into(), vec![0; 65]).await)
            .contains("keyvalue_value_kb")
    );
    for name in ["", "a\0", long.as_str()] {
        assert!(matches!(
            store.kv().open(name.into()).await.unwrap(),
            Err(Error::Other(_))
        ));
    }
    assert_eq!(
        memory.calls.load(Ordering::SeqCst),
        0,
        "the store was never asked"
    );
    // At the bound exactly, all is well.
    let at = "k".repeat(16);
    store
        .kv()
        .set(b(&bucket), at.clone(), vec![7; 64])
        .await
        .unwrap()
        .unwrap();
    let got = store.kv().get(b(&bucket), at).await.unwrap().unwrap();
    assert_eq!(got, Some(vec![7; 64]));
}

#[tokio::test]
async fn a_bucket_name_reaches_only_its_own_namespace() {
    let memory = Arc::new(Memory::default());
    let mut alice = Store::new(Some(&memory), "alice", bounds());
    let mut bob = Store::new(Some(&memory), "bob", bounds());
    for name in ["../bob", "*", "/", ".."] {
        let bucket = alice.open(name).await;
        alice
            .kv()
            .set(b(&bucket), "k".into(), b"alice".to_vec())
            .await
            .unwrap()
            .unwrap();
        let theirs = bob.open(name).await;
        assert_eq!(
            bob.kv().get(b(&theirs), "k".into()).await.unwrap().unwrap(),
            None
        );
        let page = bob.kv().list_keys(b(&theirs), None).await.unwrap().unwrap();
        assert!(page.keys.is_empty());
    }
    assert_eq!(memory.keys(&namespace("bob")), 0);
    assert_eq!(memory.keys(&namespace("alice")), 4);
}

#[tokio::test]
async fn operations_per_call_are_bounded_and_count_afresh_each_call() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(
        Some(&memory),
        "a",
        Bounds {
            ops_per_call: 5,
            ..bounds()
        },
    );
    let bucket = store.open("b").await; // 1
    for i in 0..4 {
        store
            .kv()
            .set(b(&bucket), format!("k{i}"), vec![])
            .await
            .unwrap()
            .unwrap();
    }
    let over = text(store.kv().get(b(&bucket), "k0".into()).await);
    assert!(over.contains("made its 5 key-value operations"), "{over}");
    assert!(
        over.contains("keyvalue_ops_per_call") && over.contains("[plugins.kv.limits]"),
        "{over}"
    );
    assert!(matches!(
        store.kv().open("c".into()).await.unwrap(),
        Err(Error::Other(_))
    ));
    store.state.rebind();
    // A batch counts one per key: 3 fit, 3 more do not.
    let keys: Vec<String> = (0..3).map(|i| format!("k{i}")).collect();
    store
        .kv()
        .get_many(b(&bucket), keys.clone())
        .await
        .unwrap()
        .unwrap();
    let over = text(store.kv().delete_many(b(&bucket), keys).await);
    assert!(
        over.contains("would take this call over its limit of 5 (3 made so far)"),
        "{over}"
    );
    assert_eq!(memory.keys(&namespace("a")), 4, "nothing deleted");
}

#[tokio::test]
async fn batches_are_bounded_and_written_all_or_none() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(Some(&memory), "a", bounds());
    let bucket = store.open("b").await;
    let five: Vec<(String, Vec<u8>)> = (0..5).map(|i| (format!("k{i}"), vec![])).collect();
    assert!(text(store.kv().set_many(b(&bucket), five).await).contains("keyvalue_page_keys"));
    let one_bad = vec![("a".into(), vec![1]), ("b".into(), vec![0; 65])];
    assert!(text(store.kv().set_many(b(&bucket), one_bad).await).contains("keyvalue_value_kb"));
    let bad_key = vec![("a".into(), vec![1]), ("".into(), vec![1])];
    assert!(text(store.kv().set_many(b(&bucket), bad_key).await).contains("empty"));
    assert_eq!(memory.calls.load(Ordering::SeqCst), 0);
    // The quota (10 keys): 8 fit, the next batch of 4 does not, and none of it is written.
    for part in 0..2 {
        let batch = (0..4)
            .map(|i| (format!("k{part}{i}"), vec![part]))
            .collect();
        store
            .kv()
            .set_many(b(&bucket), batch)
            .await
            .unwrap()
            .unwrap();
    }
    let batch = (0..4).map(|i| (format!("k9{i}"), vec![9])).collect();
    let full = text(store.kv().set_many(b(&bucket), batch).await);
    assert!(
        full.contains("quota") && full.contains("keyvalue_keys"),
        "{full}"
    );
    assert_eq!(memory.keys(&namespace("a")), 8);
    // The same key twice: written once, the last value.
    let twice = vec![("d".into(), vec![1]), ("d".into(), vec![2])];
    store
        .kv()
        .set_many(b(&bucket), twice)
        .await
        .unwrap()
        .unwrap();
    let got = store
        .kv()
        .get_many(b(&bucket), vec!["d".into(), "nope".into()])
        .await;
    assert_eq!(
        got.unwrap().unwrap(),
        vec![Some(("d".into(), vec![2])), None]
    );
}

#[tokio::test]
async fn a_get_many_answer_is_bounded_too() {
    let memory = Arc::new(Memory::default());
    let big = Bounds {
        value_bytes: 7 << 20,
        quota: Quota {
            max_keys: 10,
            max_bytes: 1 << 30,
        },
        ..bounds()
    };
    let mut store = Store::new(Some(&memory), "a", big);
    let bucket = store.open("b").await;
    let keys: Vec<String> = (0..3).map(|i| format!("k{i}")).collect();
    for key in &keys {
        store
            .kv()
            .set(b(&bucket), key.clone(), vec![1; 7 << 20])
            .await
            .unwrap()
            .unwrap();
    }
    let over = text(store.kv().get_many(b(&bucket), keys.clone()).await);
    assert!(over.contains("16 MiB"), "{over}");
    let two = store
        .kv()
        .get_many(b(&bucket), keys[..2].to_vec())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(two.len(), 2);
}

#[tokio::test]
async fn list_keys_pages_with_a_cursor() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(Some(&memory), "a", bounds());
    let bucket = store.open("b").await;
    for i in 0..6 {
        store
            .kv()
            .set(b(&bucket), format!("k{i}"), vec![])
            .await
            .unwrap()
            .unwrap();
    }
    let (mut cursor, mut all) = (None, Vec::new());
    loop {
        let page = store
            .kv()
            .list_keys(b(&bucket), cursor)
            .await
            .unwrap()
            .unwrap();
        assert!(page.keys.len() <= 4);
        all.extend(page.keys);
        cursor = page.cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(all, (0..6).map(|i| format!("k{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_swap_that_lost_a_race_gets_a_fresh_handle_to_retry_with() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(Some(&memory), "a", bounds());
    let bucket = store.open("b").await;
    store
        .kv()
        .set(b(&bucket), "n".into(), b"1".to_vec())
        .await
        .unwrap()
        .unwrap();
    let cas = store
        .kv()
        .new(b(&bucket), "n".into())
        .await
        .unwrap()
        .unwrap();
    let seen = store
        .kv()
        .current(Resource::new_borrow(cas.rep()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen, Some(b"1".to_vec()));
    // Another writer gets there first.
    memory
        .write(
            &namespace("a"),
            "b",
            vec![("n".into(), b"5".to_vec())],
            bounds().quota,
        )
        .unwrap();
    let fresh = match store.kv().swap(cas, b"2".to_vec()).await.unwrap() {
        Err(CasError::CasFailed(fresh)) => fresh,
        other => panic!("expected cas-failed, got {other:?}"),
    };
    let seen = store
        .kv()
        .current(Resource::new_borrow(fresh.rep()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen, Some(b"5".to_vec()));
    store
        .kv()
        .swap(fresh, b"6".to_vec())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .kv()
            .get(b(&bucket), "n".into())
            .await
            .unwrap()
            .unwrap(),
        Some(b"6".to_vec())
    );
    assert_eq!(store.state.handles, 1, "only the bucket is left open");
    // On a key with no value, the swap creates it.
    let cas = store
        .kv()
        .new(b(&bucket), "new".into())
        .await
        .unwrap()
        .unwrap();
    store.kv().swap(cas, b"x".to_vec()).await.unwrap().unwrap();
    // A value over its bound fails the swap, and the handle is gone.
    let cas = store
        .kv()
        .new(b(&bucket), "new".into())
        .await
        .unwrap()
        .unwrap();
    match store.kv().swap(cas, vec![0; 65]).await.unwrap() {
        Err(CasError::StoreError(Error::Other(t))) => assert!(t.contains("keyvalue_value_kb")),
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(store.state.handles, 1);
}

#[tokio::test]
async fn increment_keeps_decimal_text() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(Some(&memory), "a", bounds());
    let bucket = store.open("b").await;
    assert_eq!(
        store
            .kv()
            .increment(b(&bucket), "n".into(), 5)
            .await
            .unwrap()
            .unwrap(),
        5
    );
    assert_eq!(
        store
            .kv()
            .increment(b(&bucket), "n".into(), -7)
            .await
            .unwrap()
            .unwrap(),
        -2
    );
    assert_eq!(
        store
            .kv()
            .get(b(&bucket), "n".into())
            .await
            .unwrap()
            .unwrap(),
        Some(b"-2".to_vec())
    );
    store
        .kv()
        .set(b(&bucket), "s".into(), b"abc".to_vec())
        .await
        .unwrap()
        .unwrap();
    assert!(text(store.kv().increment(b(&bucket), "s".into(), 1).await).contains("decimal"));
}

#[tokio::test]
async fn open_handles_are_bounded_and_dropping_frees_them() {
    let memory = Arc::new(Memory::default());
    let mut store = Store::new(
        Some(&memory),
        "a",
        Bounds {
            ops_per_call: u32::MAX,
            ..bounds()
        },
    );
    let mut open = Vec::new();
    for _ in 0..MAX_HANDLES {
        open.push(store.open("b").await);
    }
    let over = text(store.kv().open("b".into()).await);
    assert!(over.contains("buckets and CAS handles"), "{over}");
    let last = open.pop().unwrap();
    HostBucket::drop(&mut store.kv(), last).await.unwrap();
    store.open("b").await;
}
