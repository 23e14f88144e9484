//! The 2026-07-28 result envelope: what that revision adds to every
//! result (`resultType`, the server's identity in `_meta`, and on a
//! cacheable result `ttlMs` and `cacheScope`). One value, put on a JSON
//! result ([`Envelope::wrap`]) or serialized into a page spliced from
//! prepared text ([`Envelope::serialize_into`]).

use crate::protocol::{meta, ResultType};
use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::{Map, Value};

/// Who may reuse a cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Anyone: every caller gets the same result.
    Public,
    /// The requester only: the result depends on who asked.
    Private,
}

/// How long, and by whom, a result may be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caching {
    /// For how long, in milliseconds.
    pub ttl_ms: u64,
    /// By whom.
    pub scope: CacheScope,
}

/// The server's identity, as `_meta` carries it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerInfoMeta {
    /// The server's name and version.
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: Value,
}

/// What 2026-07-28 adds to a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// What kind of result it is.
    pub result_type: ResultType,
    /// The server's identity.
    #[serde(rename = "_meta")]
    pub meta: ServerInfoMeta,
    /// For how long it may be reused, if it is cacheable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// By whom it may be reused, if it is cacheable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

impl Envelope {
    /// The envelope of a complete result from the server `server_info`
    /// names, with `caching` hints if it is cacheable.
    pub fn complete(server_info: Value, caching: Option<Caching>) -> Self {
        Envelope {
            result_type: ResultType::Complete,
            meta: ServerInfoMeta { server_info },
            ttl_ms: caching.map(|c| c.ttl_ms),
            cache_scope: caching.map(|c| c.scope),
        }
    }

    /// `result` with this envelope: the server's identity is set in its
    /// `_meta`; what the result already says of its kind and caching is
    /// kept. A result that is not an object is left as it is.
    pub fn wrap(self, mut result: Value) -> Value {
        let Some(obj) = result.as_object_mut() else {
            return result;
        };
        self.result_type.tag_unless_set(obj);
        let meta = obj
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(meta::SERVER_INFO.into(), self.meta.server_info);
        }
        if let Some(ttl) = self.ttl_ms {
            obj.entry("ttlMs").or_insert_with(|| Value::from(ttl));
        }
        if let Some(scope) = self.cache_scope {
            obj.entry("cacheScope")
                .or_insert_with(|| crate::protocol::model::to_json(&scope));
        }
        result
    }

    /// Writes this envelope's members into `map`, a result being
    /// serialized (a page spliced from prepared text).
    pub fn serialize_into<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry(ResultType::KEY, &self.result_type)?;
        map.serialize_entry("_meta", &self.meta)?;
        if let Some(ttl) = &self.ttl_ms {
            map.serialize_entry("ttlMs", ttl)?;
        }
        if let Some(scope) = &self.cache_scope {
            map.serialize_entry("cacheScope", scope)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(caching: Option<Caching>) -> Envelope {
        Envelope::complete(json!({ "name": "s", "version": "1" }), caching)
    }

    #[test]
    fn wrapping_adds_the_envelope_and_keeps_what_the_result_set() {
        let private = Caching {
            ttl_ms: 5,
            scope: CacheScope::Private,
        };
        let wrapped = envelope(Some(private)).wrap(json!({
            "x": 1, "resultType": "task", "_meta": { "k": 2 }, "cacheScope": "public"
        }));
        assert_eq!(
            wrapped,
            json!({
                "x": 1,
                "resultType": "task",
                "_meta": { "k": 2, meta::SERVER_INFO: { "name": "s", "version": "1" } },
                "ttlMs": 5,
                "cacheScope": "public",
            })
        );
        assert_eq!(envelope(None).wrap(json!({}))["resultType"], "complete");
        assert!(envelope(None).wrap(json!({})).get("ttlMs").is_none());
        assert_eq!(envelope(None).wrap(json!([1])), json!([1]));
    }

    #[test]
    fn serialized_into_a_page_it_says_what_wrapping_adds() {
        struct Page(Envelope);
        impl Serialize for Page {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("items", &[1])?;
                self.0.serialize_into(&mut map)?;
                map.end()
            }
        }
        for scope in [CacheScope::Public, CacheScope::Private] {
            let caching = Some(Caching { ttl_ms: 7, scope });
            let page = crate::protocol::model::to_json(&Page(envelope(caching)));
            assert_eq!(page, envelope(caching).wrap(json!({ "items": [1] })));
        }
    }
}
