//! The 2026-07-28 result envelope: what that revision adds to every
//! result (`resultType`, the server's identity in `_meta`, and on a
//! cacheable result `ttlMs` and `cacheScope`). One value, written around a
//! JSON result as it is serialized ([`Envelope::around`]) or into a page
//! spliced from prepared text ([`Envelope::serialize_into`]).

use super::ServerInfo;
use crate::protocol::{meta, ResultType};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
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
pub struct ServerInfoMeta<'a> {
    /// The server's name and version.
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: ServerInfo<'a>,
}

/// What 2026-07-28 adds to a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<'a> {
    /// What kind of result it is.
    pub result_type: ResultType,
    /// The server's identity.
    #[serde(rename = "_meta")]
    pub meta: ServerInfoMeta<'a>,
    /// For how long it may be reused, if it is cacheable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// By whom it may be reused, if it is cacheable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

impl<'a> Envelope<'a> {
    /// The envelope of a complete result from the server `server_info`
    /// names, with `caching` hints if it is cacheable.
    pub fn complete(server_info: ServerInfo<'a>, caching: Option<Caching>) -> Self {
        Envelope {
            result_type: ResultType::Complete,
            meta: ServerInfoMeta { server_info },
            ttl_ms: caching.map(|c| c.ttl_ms),
            cache_scope: caching.map(|c| c.scope),
        }
    }

    /// `result` with this envelope, to serialize: the server's identity is
    /// set in its `_meta`; what the result already says of its kind and
    /// caching is kept. A result that is not an object is left as it is.
    pub fn around<'r>(&'r self, result: &'r Value) -> Enveloped<'r> {
        Enveloped {
            envelope: self,
            result,
        }
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

/// A JSON result with its envelope, written as it is serialized (nothing
/// is copied into the result).
pub struct Enveloped<'r> {
    envelope: &'r Envelope<'r>,
    result: &'r Value,
}

impl Serialize for Enveloped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(result) = self.result else {
            return self.result.serialize(serializer);
        };
        let envelope = self.envelope;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in result {
            match (key.as_str(), value) {
                ("_meta", Value::Object(meta)) => {
                    let server_info = &envelope.meta.server_info;
                    map.serialize_entry(key, &WithServerInfo { meta, server_info })?
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        if !result.contains_key(ResultType::KEY) {
            map.serialize_entry(ResultType::KEY, &envelope.result_type)?;
        }
        if !result.contains_key("_meta") {
            map.serialize_entry("_meta", &envelope.meta)?;
        }
        if let Some(ttl) = envelope.ttl_ms.filter(|_| !result.contains_key("ttlMs")) {
            map.serialize_entry("ttlMs", &ttl)?;
        }
        if let Some(scope) = envelope
            .cache_scope
            .filter(|_| !result.contains_key("cacheScope"))
        {
            map.serialize_entry("cacheScope", &scope)?;
        }
        map.end()
    }
}

/// A result's own `_meta`, with the server's identity set in it.
struct WithServerInfo<'r> {
    meta: &'r Map<String, Value>,
    server_info: &'r ServerInfo<'r>,
}

impl Serialize for WithServerInfo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.meta {
            if key != meta::SERVER_INFO {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry(meta::SERVER_INFO, self.server_info)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SERVER: ServerInfo<'static> = ServerInfo {
        name: "s",
        version: "1",
    };

    fn envelope(caching: Option<Caching>) -> Envelope<'static> {
        Envelope::complete(SERVER, caching)
    }

    /// `result` with `envelope` around it, as the client reads it.
    fn wrap(envelope: Envelope<'_>, result: Value) -> Value {
        let text = serde_json::to_string(&envelope.around(&result)).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn wrapping_adds_the_envelope_and_keeps_what_the_result_set() {
        let private = Caching {
            ttl_ms: 5,
            scope: CacheScope::Private,
        };
        let result = json!({
            "x": 1, "resultType": "task", "_meta": { "k": 2 }, "cacheScope": "public"
        });
        assert_eq!(
            wrap(envelope(Some(private)), result),
            json!({
                "x": 1,
                "resultType": "task",
                "_meta": { "k": 2, meta::SERVER_INFO: { "name": "s", "version": "1" } },
                "ttlMs": 5,
                "cacheScope": "public",
            })
        );
        assert_eq!(
            wrap(envelope(None), json!({})),
            json!({ "resultType": "complete", "_meta": { meta::SERVER_INFO: { "name": "s", "version": "1" } } })
        );
        assert_eq!(wrap(envelope(None), json!([1])), json!([1]));
        // A `_meta` that is not an object is left as it is.
        assert_eq!(wrap(envelope(None), json!({ "_meta": 3 }))["_meta"], 3);
    }

    #[test]
    fn the_servers_identity_replaces_one_the_result_claims_and_is_written_once() {
        let result = json!({ "_meta": { meta::SERVER_INFO: { "name": "forged" }, "k": 1 } });
        let text = serde_json::to_string(&envelope(None).around(&result)).unwrap();
        assert_eq!(text.matches(meta::SERVER_INFO).count(), 1, "{text}");
        let read: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(read["_meta"][meta::SERVER_INFO]["name"], "s");
        assert_eq!(read["_meta"]["k"], 1);
    }

    #[test]
    fn serialized_into_a_page_it_says_what_wrapping_adds() {
        struct Page(Envelope<'static>);
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
            assert_eq!(page, wrap(envelope(caching), json!({ "items": [1] })));
        }
    }
}
