//! What every key-value store must do, checked the same way against each
//! (SQLite here, PostgreSQL in `crate::cluster`).

use crate::runtime::keyvalue::{Backend, Namespace, Quota, StoreError, Versioned};
use std::sync::Arc;

fn ns(plugin: &str, tenant: &str) -> Namespace {
    Namespace {
        plugin: plugin.into(),
        tenant: tenant.into(),
    }
}

const ROOMY: Quota = Quota {
    max_keys: 10_000,
    max_bytes: 10 << 20,
};

fn entries(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

async fn values(
    store: &dyn Backend,
    ns: &Namespace,
    bucket: &str,
    keys: &[&str],
) -> Vec<Option<Vec<u8>>> {
    let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    store.get_many(ns, bucket, &keys).await.unwrap()
}

async fn usage_of(store: &dyn Backend, ns: &Namespace) -> (u64, u64) {
    store
        .usage()
        .await
        .unwrap()
        .into_iter()
        .find(|u| &u.namespace == ns)
        .map_or((0, 0), |u| (u.keys, u.bytes))
}

/// Every key of a bucket, page by page of `page` keys; the pages' sizes.
async fn all_keys(
    store: &dyn Backend,
    ns: &Namespace,
    bucket: &str,
    page: usize,
) -> (Vec<String>, Vec<usize>) {
    let (mut keys, mut pages, mut cursor) = (Vec::new(), Vec::new(), None);
    loop {
        let (some, next) = store
            .list_keys(ns, bucket, cursor.clone(), page)
            .await
            .unwrap();
        assert!(some.len() <= page);
        pages.push(some.len());
        keys.extend(some);
        match next {
            None => return (keys, pages),
            Some(next) => cursor = Some(next),
        }
        assert!(pages.len() < 1000, "paging ends");
    }
}

/// Checks the whole contract on an empty store.
pub(crate) async fn check(store: &dyn Backend) {
    round_trips(store).await;
    pages(store).await;
    quota(store).await;
    compare_and_swap(store).await;
    increments(store).await;
    namespaces_apart(store).await;
    operators_view(store).await;
}

async fn round_trips(store: &dyn Backend) {
    let a = ns("p", "rt");
    let hostile = ["", "..", "a/b", "nul\0byte", "é", "../../other", "%2F"];
    let mut batch: Vec<(String, Vec<u8>)> = hostile
        .iter()
        .map(|k| (k.to_string(), format!("value of {k}").into_bytes()))
        .collect();
    batch.push(("empty".into(), Vec::new()));
    batch.push(("binary".into(), vec![0, 255, 1, 254]));
    store.set_many(&a, "b", batch.clone(), ROOMY).await.unwrap();
    for (key, value) in &batch {
        assert_eq!(
            values(store, &a, "b", &[key]).await,
            [Some(value.clone())],
            "{key:?}"
        );
        assert!(store.exists(&a, "b", key).await.unwrap(), "{key:?}");
        let versioned = store.get_versioned(&a, "b", key).await.unwrap();
        assert_eq!(versioned.value.as_ref(), Some(value));
        assert!(versioned.version > 0);
    }
    assert_eq!(
        values(store, &a, "b", &["missing", "empty", "missing"]).await,
        [None, Some(Vec::new()), None]
    );
    assert!(!store.exists(&a, "b", "missing").await.unwrap());
    assert_eq!(
        store.get_versioned(&a, "b", "missing").await.unwrap(),
        Versioned {
            value: None,
            version: 0
        }
    );
    // Another bucket of the same namespace is another place.
    assert_eq!(values(store, &a, "other", &["empty"]).await, [None]);
    // Overwriting gives a new version; a batch repeating a key keeps its last value.
    let before = store.get_versioned(&a, "b", "empty").await.unwrap().version;
    store
        .set_many(&a, "b", entries(&[("empty", b"1"), ("empty", b"2")]), ROOMY)
        .await
        .unwrap();
    let after = store.get_versioned(&a, "b", "empty").await.unwrap();
    assert_eq!(after.value.as_deref(), Some(&b"2"[..]));
    assert!(after.version > before);
    // Deleting: missing keys are no error; the rest go.
    store
        .delete_many(
            &a,
            "b",
            vec!["empty".into(), "never".into(), "empty".into()],
        )
        .await
        .unwrap();
    assert_eq!(values(store, &a, "b", &["empty"]).await, [None]);
    assert_eq!(usage_of(store, &a).await.0, batch.len() as u64 - 1);
    let keys: Vec<String> = batch.iter().map(|(k, _)| k.clone()).collect();
    store.delete_many(&a, "b", keys).await.unwrap();
    assert_eq!(usage_of(store, &a).await, (0, 0));
    assert!(store
        .usage()
        .await
        .unwrap()
        .iter()
        .all(|u| u.namespace != a));
}

async fn pages(store: &dyn Backend) {
    let a = ns("p", "pages");
    let mut keys: Vec<String> = (0..23).map(|n| format!("k{n}")).collect();
    keys.extend(["A", "a", "Z", "é", "z", "", "\u{1}", "k1\0"].map(String::from));
    let batch = keys.iter().map(|k| (k.clone(), b"v".to_vec())).collect();
    store.set_many(&a, "b", batch, ROOMY).await.unwrap();
    store
        .set_many(&a, "c", entries(&[("elsewhere", b"v")]), ROOMY)
        .await
        .unwrap();
    keys.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    let (listed, pages) = all_keys(store, &a, "b", 7).await;
    assert_eq!(listed, keys, "every key once, in byte order");
    assert!(pages.len() >= 5, "{pages:?}");
    // A cursor is the last key given: a page starts just after it.
    let (first, cursor) = store.list_keys(&a, "b", None, 3).await.unwrap();
    assert_eq!(first, keys[..3]);
    assert_eq!(cursor.as_deref(), Some(keys[2].as_str()));
    let (second, _) = store.list_keys(&a, "b", cursor, 3).await.unwrap();
    assert_eq!(second, keys[3..6]);
    // A page exactly at the end says there is no more.
    let (last, cursor) = store
        .list_keys(&a, "b", Some(keys[keys.len() - 3].clone()), 2)
        .await
        .unwrap();
    assert_eq!(last, keys[keys.len() - 2..]);
    assert_eq!(cursor, None);
    let (none, cursor) = store.list_keys(&a, "empty-bucket", None, 10).await.unwrap();
    assert!(none.is_empty() && cursor.is_none());
}

async fn quota(store: &dyn Backend) {
    let a = ns("p", "quota");
    let tight = Quota {
        max_keys: 3,
        max_bytes: 40,
    };
    store
        .set_many(
            &a,
            "b",
            entries(&[("k1", b"12345"), ("k2", b"12345")]),
            tight,
        )
        .await
        .unwrap();
    let before = usage_of(store, &a).await;
    assert_eq!(before, (2, 2 * (1 + 2 + 5)));
    // Two new keys where one fits: the whole batch is refused.
    let err = store
        .set_many(&a, "b", entries(&[("k3", b"1"), ("k4", b"1")]), tight)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Full(text) if text.contains("keyvalue_keys")),
        "{err:?}"
    );
    assert_eq!(values(store, &a, "b", &["k3", "k4"]).await, [None, None]);
    // Too many bytes, by a change to a key it has and a new one.
    let err = store
        .set_many(
            &a,
            "b",
            entries(&[("k1", b"1"), ("k3", &[b'x'; 30])]),
            tight,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Full(text) if text.contains("keyvalue_mb")),
        "{err:?}"
    );
    assert_eq!(
        values(store, &a, "b", &["k1", "k3"]).await,
        [Some(b"12345".to_vec()), None]
    );
    assert_eq!(usage_of(store, &a).await, before);
    // Increments and swaps are held to it too.
    let full = Quota {
        max_keys: 2,
        max_bytes: 40,
    };
    assert!(matches!(
        store.increment(&a, "b", "n", 1, full).await,
        Err(StoreError::Full(_))
    ));
    assert!(matches!(
        store.swap(&a, "b", "n", 0, b"1".to_vec(), full).await,
        Err(StoreError::Full(_))
    ));
    assert_eq!(values(store, &a, "b", &["n"]).await, [None]);
    // Shrinking is allowed under a limit since lowered.
    let lowered = Quota {
        max_keys: 1,
        max_bytes: 1,
    };
    store
        .set_many(&a, "b", entries(&[("k1", b"1")]), lowered)
        .await
        .unwrap();
    assert_eq!(usage_of(store, &a).await, (2, 8 + 4));
    // What fits exactly is written.
    store
        .set_many(&a, "b", entries(&[("k3", &[b'x'; 25])]), tight)
        .await
        .unwrap();
    assert_eq!(usage_of(store, &a).await, (3, 40));
}

async fn compare_and_swap(store: &dyn Backend) {
    let a = ns("p", "cas");
    // Version 0: only while the key has no value.
    assert!(store
        .swap(&a, "b", "k", 0, b"first".to_vec(), ROOMY)
        .await
        .unwrap());
    assert!(!store
        .swap(&a, "b", "k", 0, b"again".to_vec(), ROOMY)
        .await
        .unwrap());
    // Two read the same version; the second to write loses.
    let seen = store.get_versioned(&a, "b", "k").await.unwrap();
    assert!(store
        .swap(&a, "b", "k", seen.version, b"winner".to_vec(), ROOMY)
        .await
        .unwrap());
    assert!(!store
        .swap(&a, "b", "k", seen.version, b"loser".to_vec(), ROOMY)
        .await
        .unwrap());
    assert_eq!(
        values(store, &a, "b", &["k"]).await,
        [Some(b"winner".to_vec())]
    );
    // No ABA: deleted and set again to the same value, the key's version
    // is new, so a swap against the old one fails.
    let old = store.get_versioned(&a, "b", "k").await.unwrap();
    store.delete_many(&a, "b", vec!["k".into()]).await.unwrap();
    store
        .set_many(&a, "b", entries(&[("k", b"winner")]), ROOMY)
        .await
        .unwrap();
    let new = store.get_versioned(&a, "b", "k").await.unwrap();
    assert_eq!(new.value, old.value);
    assert_ne!(new.version, old.version);
    assert!(!store
        .swap(&a, "b", "k", old.version, b"stale".to_vec(), ROOMY)
        .await
        .unwrap());
    // A version from another key is not this key's.
    store
        .set_many(&a, "b", entries(&[("other", b"x")]), ROOMY)
        .await
        .unwrap();
    let other = store.get_versioned(&a, "b", "other").await.unwrap();
    assert!(!store
        .swap(&a, "b", "k", other.version, b"stale".to_vec(), ROOMY)
        .await
        .unwrap());
    assert_eq!(
        values(store, &a, "b", &["k"]).await,
        [Some(b"winner".to_vec())]
    );
    // A swap against a deleted key's version fails; against 0 it succeeds.
    store.delete_many(&a, "b", vec!["k".into()]).await.unwrap();
    assert!(!store
        .swap(&a, "b", "k", new.version, b"x".to_vec(), ROOMY)
        .await
        .unwrap());
    assert!(store
        .swap(&a, "b", "k", 0, b"x".to_vec(), ROOMY)
        .await
        .unwrap());
}

async fn increments(store: &dyn Backend) {
    let a = ns("p", "incr");
    assert_eq!(store.increment(&a, "b", "n", 5, ROOMY).await, Ok(5));
    assert_eq!(store.increment(&a, "b", "n", -7, ROOMY).await, Ok(-2));
    assert_eq!(values(store, &a, "b", &["n"]).await, [Some(b"-2".to_vec())]);
    let v = store.get_versioned(&a, "b", "n").await.unwrap().version;
    store.increment(&a, "b", "n", 0, ROOMY).await.unwrap();
    assert!(store.get_versioned(&a, "b", "n").await.unwrap().version > v);
    for bad in [&b"seven"[..], b"", b"1.5", b" 1", b"\xff\xfe"] {
        store
            .set_many(&a, "b", vec![("s".into(), bad.to_vec())], ROOMY)
            .await
            .unwrap();
        let err = store.increment(&a, "b", "s", 1, ROOMY).await.unwrap_err();
        assert!(matches!(err, StoreError::NotANumber(_)), "{bad:?}: {err:?}");
        assert_eq!(values(store, &a, "b", &["s"]).await, [Some(bad.to_vec())]);
    }
    store
        .set_many(
            &a,
            "b",
            vec![("max".into(), i64::MAX.to_string().into_bytes())],
            ROOMY,
        )
        .await
        .unwrap();
    assert!(matches!(
        store.increment(&a, "b", "max", 1, ROOMY).await,
        Err(StoreError::NotANumber(_))
    ));
}

async fn namespaces_apart(store: &dyn Backend) {
    let spaces = [ns("p1", "t1"), ns("p1", "t2"), ns("p2", "t1")];
    for (n, space) in spaces.iter().enumerate() {
        store
            .set_many(space, "b", vec![("k".into(), vec![n as u8])], ROOMY)
            .await
            .unwrap();
    }
    for (n, space) in spaces.iter().enumerate() {
        assert_eq!(
            values(store, space, "b", &["k"]).await,
            [Some(vec![n as u8])]
        );
        assert_eq!(all_keys(store, space, "b", 10).await.0, ["k"]);
    }
    store
        .delete_many(&spaces[0], "b", vec!["k".into()])
        .await
        .unwrap();
    assert_eq!(values(store, &spaces[0], "b", &["k"]).await, [None]);
    assert_eq!(
        values(store, &spaces[1], "b", &["k"]).await,
        [Some(vec![1])]
    );
    assert_eq!(
        values(store, &spaces[2], "b", &["k"]).await,
        [Some(vec![2])]
    );
    let seen = store.get_versioned(&spaces[1], "b", "k").await.unwrap();
    assert!(!store
        .swap(&spaces[2], "b", "k", seen.version, b"x".to_vec(), ROOMY)
        .await
        .unwrap());
    assert_eq!(store.increment(&spaces[0], "b", "k", 1, ROOMY).await, Ok(1));
    assert_eq!(
        values(store, &spaces[1], "b", &["k"]).await,
        [Some(vec![1])]
    );
    // Quotas count per namespace.
    let one = Quota {
        max_keys: 1,
        max_bytes: 100,
    };
    store
        .set_many(&spaces[1], "b", entries(&[("k", b"y")]), one)
        .await
        .unwrap();
    store
        .set_many(&ns("p3", "t2"), "b", entries(&[("k", b"y")]), one)
        .await
        .unwrap();
}

async fn operators_view(store: &dyn Backend) {
    let (alice, bob) = (ns("memory", "alice"), ns("memory", "bob"));
    let alice_fs = ns("notes", "alice");
    store
        .set_many(
            &alice,
            "graph",
            entries(&[("e1", b"one"), ("e2", b"two")]),
            ROOMY,
        )
        .await
        .unwrap();
    store
        .set_many(&alice_fs, "n", entries(&[("x", b"12345")]), ROOMY)
        .await
        .unwrap();
    store
        .set_many(&bob, "graph", entries(&[("e1", b"bob's")]), ROOMY)
        .await
        .unwrap();
    let usage = store.usage().await.unwrap();
    let find = |space: &Namespace| {
        usage
            .iter()
            .find(|u| &u.namespace == space)
            .map(|u| (u.keys, u.bytes))
    };
    assert_eq!(find(&alice), Some((2, 2 * (5 + 2 + 3))));
    assert_eq!(find(&alice_fs), Some((1, 1 + 1 + 5)));
    assert_eq!(find(&bob), Some((1, 5 + 2 + 5)));
    assert!(usage.iter().all(|u| u.keys > 0));

    let mut exported = store.export("alice", 1 << 20).await.unwrap();
    exported.sort_by(|x, y| (&x.plugin, &x.key).cmp(&(&y.plugin, &y.key)));
    let shown: Vec<(&str, &str, &str, &[u8])> = exported
        .iter()
        .map(|e| (&*e.plugin, &*e.bucket, &*e.key, &e.value[..]))
        .collect();
    assert_eq!(
        shown,
        [
            ("memory", "graph", "e1", &b"one"[..]),
            ("memory", "graph", "e2", b"two"),
            ("notes", "n", "x", b"12345"),
        ]
    );
    let err = store.export("alice", 10).await.unwrap_err();
    assert!(err.to_string().contains("limit of 10 bytes"), "{err}");
    assert!(store.export("nobody", 10).await.unwrap().is_empty());

    assert_eq!(store.delete_tenant("alice").await.unwrap(), (3, 20 + 7));
    assert!(store.export("alice", 1 << 20).await.unwrap().is_empty());
    let usage = store.usage().await.unwrap();
    assert!(usage.iter().all(|u| &*u.namespace.tenant != "alice"));
    assert!(usage.iter().any(|u| u.namespace == bob));
    assert_eq!(
        values(store, &bob, "graph", &["e1"]).await,
        [Some(b"bob's".to_vec())]
    );
    assert_eq!(store.delete_tenant("alice").await.unwrap(), (0, 0));
    // The tenant may come back, from nothing.
    store
        .set_many(&alice, "graph", entries(&[("e1", b"new")]), ROOMY)
        .await
        .unwrap();
    assert_eq!(usage_of(store, &alice).await, (1, 5 + 2 + 3));
}

/// Tasks at once on one key: `increment`s and compare-and-swap loops
/// (read, add one, swap; again when another won) lose no update.
pub(crate) async fn concurrent(store: Arc<dyn Backend>) {
    const TASKS: usize = 8;
    const EACH: i64 = 25;
    let a = ns("p", "concurrent");
    let mut running = Vec::new();
    for n in 0..TASKS {
        let (store, a) = (store.clone(), a.clone());
        running.push(tokio::spawn(async move {
            let mut lost = 0;
            for _ in 0..EACH {
                if n % 2 == 0 {
                    store.increment(&a, "b", "total", 1, ROOMY).await.unwrap();
                    continue;
                }
                loop {
                    let seen = store.get_versioned(&a, "b", "total").await.unwrap();
                    let now: i64 = seen
                        .value
                        .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                    let next = (now + 1).to_string().into_bytes();
                    if store
                        .swap(&a, "b", "total", seen.version, next, ROOMY)
                        .await
                        .unwrap()
                    {
                        break;
                    }
                    lost += 1;
                }
            }
            lost
        }));
    }
    for task in running {
        task.await.unwrap();
    }
    assert_eq!(
        values(&*store, &a, "b", &["total"]).await,
        [Some((TASKS as i64 * EACH).to_string().into_bytes())]
    );
    assert_eq!(usage_of(&*store, &a).await.0, 1);
}
