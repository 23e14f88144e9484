//! Every method, on each of the five revisions, in process: a real
//! [`Server`] over the example plugins (`hello`: the tools `greet`, `add`
//! and `countdown`; `notes`: the resource `notes://index`, the template
//! `notes://note/{id}`, the prompt `summarize` and their completions),
//! driven one JSON line at a time through [`crate::server::handle_text`], the
//! entry the stdio transport uses, so each request goes through parsing,
//! the era, revision gating, dispatch and the answer's shaping. One
//! behaviour is run through every revision ([`EVERY_REVISION`]), on the
//! handshake wire for 2024-11-05 to 2025-11-25 (after `initialize` and
//! `notifications/initialized`) and on the stateless wire (the revision in
//! each request's `_meta`) for 2026-07-28.
//!
//! The plugins are the components `scripts/build` puts in `dist/` (no
//! plugin type other than a wasm component exists: a catalogue's entries
//! are `LoadedPlugin`s), compiled by the baseline compiler once per test.

mod completion;
mod lifecycle;
mod prompts;
mod resources;
mod skills;
mod subscriptions;
mod tasks;
mod tool_calls;
mod tool_search;
mod tools;

use crate::protocol::{meta, Revision};
use crate::registry::tests::registry;
use crate::server::{Caller, Connection, OutboxReceiver, Server, ServerOptions};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Every revision, oldest first.
pub(super) const EVERY_REVISION: [Revision; 5] = Revision::ALL;

/// The handshake revisions.
pub(super) fn handshake_revisions() -> impl Iterator<Item = Revision> {
    EVERY_REVISION.into_iter().filter(|r| !r.is_stateless())
}

/// A server over `hello` and `notes`, with `options`.
pub(super) async fn server_with(options: ServerOptions) -> Arc<Server> {
    server_of(
        &[
            ("hello", "plugins/hello.wasm"),
            ("notes", "plugins/notes.wasm"),
        ],
        options,
    )
    .await
}

/// A server over `plugins` (each a name and a component's path under
/// `dist/`), with `options`.
pub(super) async fn server_of(plugins: &[(&str, &str)], options: ServerOptions) -> Arc<Server> {
    let registry = registry();
    for (name, file) in plugins {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../dist")
            .join(file);
        let bytes = tokio::fs::read(&path)
            .await
            .unwrap_or_else(|e| panic!("{}: {e} (scripts/build makes it)", path.display()));
        let source = crate::runtime::ComponentSource::new(bytes);
        let grants = crate::runtime::Grants::default();
        let loaded = registry.load(name, source, grants, true).await.unwrap();
        registry.install(loaded);
    }
    Server::new(registry, options)
}

/// A server over `hello` and `notes` with the default options.
pub(super) async fn server() -> Arc<Server> {
    server_with(ServerOptions::default()).await
}

/// One client's connection to a server, speaking one revision.
pub(super) struct Client {
    /// The revision it speaks.
    pub(super) revision: Revision,
    conn: Arc<Connection>,
    rx: OutboxReceiver,
    next_id: u64,
    /// The client capabilities a stateless request declares in `_meta`.
    capabilities: Value,
    /// What the server sent that was not a response waited for, in order.
    pub(super) others: Vec<Value>,
}

impl Client {
    /// A connection that has not spoken yet.
    pub(super) fn unopened(server: &Arc<Server>, revision: Revision) -> Client {
        let (out, rx) = crate::server::Outbox::new();
        let conn = Connection::new(server.clone(), out, Caller::operator());
        Client {
            revision,
            conn,
            rx,
            next_id: 100,
            capabilities: json!({}),
            others: Vec::new(),
        }
    }

    /// A client of `revision` ready for requests: after the handshake on
    /// a handshake revision; at once on the stateless one.
    pub(super) async fn open(server: &Arc<Server>, revision: Revision) -> Client {
        let mut client = Client::unopened(server, revision);
        if !revision.is_stateless() {
            let init = client.initialize(revision.as_str()).await;
            assert_eq!(
                init["result"]["protocolVersion"],
                revision.as_str(),
                "{init}"
            );
            client.notify("notifications/initialized", json!({}));
        }
        client
    }

    /// A stateless client that declares the tasks extension.
    pub(super) fn with_tasks(mut self) -> Client {
        self.capabilities = json!({ "extensions": { meta::TASKS_EXTENSION: {} } });
        self
    }

    /// Sends `initialize` for `version`: its response.
    pub(super) async fn initialize(&mut self, version: &str) -> Value {
        let params = json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "methods-tests", "version": "0" },
        });
        self.send_raw("initialize", params).await
    }

    /// Sends a notification.
    pub(super) fn notify(&self, method: &str, params: Value) {
        let message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        crate::server::handle_text(&self.conn, &message.to_string());
    }

    /// The params of a request of this client's revision: on the
    /// stateless one, with its `_meta` (kept where `params` sets it).
    pub(super) fn params(&self, mut params: Value) -> Value {
        if self.revision.is_stateless() {
            let meta = params
                .as_object_mut()
                .expect("params are an object")
                .entry("_meta")
                .or_insert_with(|| json!({}));
            let meta = meta.as_object_mut().expect("_meta is an object");
            meta.entry(meta::PROTOCOL_VERSION)
                .or_insert_with(|| json!(self.revision.as_str()));
            meta.entry(meta::CLIENT_CAPABILITIES)
                .or_insert_with(|| self.capabilities.clone());
        }
        params
    }

    /// The response to a request of `method` with `params` as this
    /// client's revision sends them.
    pub(super) async fn request(&mut self, method: &str, params: Value) -> Value {
        let params = self.params(params);
        self.send_raw(method, params).await
    }

    /// The response to a request sent exactly as given.
    pub(super) async fn send_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_only(method, params);
        self.response(id).await
    }

    /// Sends a request exactly as given: its id.
    pub(super) fn send_only(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        crate::server::handle_text(&self.conn, &message.to_string());
        id
    }

    /// The response to request `id`; what comes before it is kept in
    /// [`Client::others`].
    pub(super) async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next().await;
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
            self.others.push(message);
        }
    }

    /// The next message the server sends.
    pub(super) async fn next(&mut self) -> Value {
        let message = tokio::time::timeout(Duration::from_secs(10), self.rx.recv())
            .await
            .unwrap_or_else(|_| panic!("{}: nothing sent within 10 s", self.revision))
            .expect("the connection is open");
        serde_json::from_str(&message.text()).expect("the server sends JSON")
    }

    /// The result of a request that must succeed.
    pub(super) async fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params.clone()).await;
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{}: {method} {params} failed: {response}", self.revision),
        }
    }

    /// The error (code, message) of a request that must fail.
    pub(super) async fn error(&mut self, method: &str, params: Value) -> (i64, String) {
        let response = self.request(method, params.clone()).await;
        error_of(&response).unwrap_or_else(|| {
            panic!(
                "{}: {method} {params} should fail: {response}",
                self.revision
            )
        })
    }
}

/// The code and message of an error response.
pub(super) fn error_of(response: &Value) -> Option<(i64, String)> {
    let error = response.get("error")?;
    Some((
        error["code"].as_i64()?,
        error["message"].as_str()?.to_owned(),
    ))
}

/// A result without what the 2026-07-28 envelope adds (`resultType`,
/// `ttlMs`, `cacheScope`, the server's identity in `_meta`), after
/// checking it is there, with the values this server gives; the result as
/// it is on the other revisions. `caching` is the `ttlMs` and
/// `cacheScope` its method's results carry, if any.
pub(super) fn unwrapped(
    revision: Revision,
    mut result: Value,
    caching: Option<(u64, &str)>,
) -> Value {
    let obj = result.as_object_mut().expect("a result is an object");
    if !revision.is_stateless() {
        for key in ["resultType", "ttlMs", "cacheScope"] {
            assert!(!obj.contains_key(key), "{revision}: {key} in {obj:?}");
        }
        return result;
    }
    assert_eq!(
        obj.remove("resultType"),
        Some(json!("complete")),
        "{revision}: {obj:?}"
    );
    let ttl = obj.remove("ttlMs");
    let scope = obj.remove("cacheScope");
    assert_eq!(
        (ttl, scope),
        match caching {
            Some((ttl, scope)) => (Some(json!(ttl)), Some(json!(scope))),
            None => (None, None),
        },
        "{revision}: caching hints"
    );
    let mut meta = obj.remove("_meta").expect("a 2026-07-28 result has _meta");
    let info = meta
        .as_object_mut()
        .unwrap()
        .remove(meta::SERVER_INFO)
        .expect("_meta names the server");
    assert_eq!(info["name"], "wasm-mcp");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    if meta.as_object().is_some_and(|m| !m.is_empty()) {
        obj.insert("_meta".into(), meta);
    }
    result
}

/// The caching hints of a list on the stateless revision.
pub(super) fn list_caching() -> Option<(u64, &'static str)> {
    Some((ServerOptions::default().list_ttl_ms, "public"))
}
