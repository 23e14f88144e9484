//! The data of one store (one call, or several in turn in an instance kept
//! warm): WASI state (with the plugin's grants), outbound HTTP gated by
//! granted hosts, limits, and the caller's context that the `host` imports
//! report to.

use super::bindings::wasm_mcp::plugin::{host, types};
use super::context::CallContext;
use super::grants::Grants;
use super::keyvalue::{KeyValueState, Namespace};
use super::limiter::MemoryCap;
use super::log_pipe::LogPipe;
use super::quota::Quota;
use super::spare::Placement;
use super::wait_clock::WaitClock;
use std::future::Future;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

/// What a store holds for the duration of one call (or, kept warm, of
/// its calls in turn).
pub(super) struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    gate: HttpGate,
    table: ResourceTable,
    /// Memories and tables, together.
    pub(super) memory: MemoryCap,
    pub(super) context: Arc<dyn CallContext>,
    /// The plugin's name, for the log.
    pub(super) plugin: Arc<str>,
    /// What the plugin was granted.
    pub(super) grants: Arc<Grants>,
    /// The call's tool calls so far (`tool-calls`).
    pub(super) tool_call_use: super::tool_calls::ToolCallUse,
    /// How many notifications the call may still send.
    pub(super) quota: Arc<Quota>,
    /// The largest message to the client, in bytes.
    pub(super) max_message_bytes: usize,
    /// The plugin's slot this call holds while it runs (not while it waits
    /// for the client).
    pub(super) turn: Turn,
    /// Time spent waiting for the client, which the deadline does not count.
    pub(super) wait_clock: Arc<WaitClock>,
    /// Questions asked one at a time so far (for their keys).
    asked: u32,
    /// What the plugin wrote last on stderr, for the error if it fails.
    pub(super) stderr: std::sync::Weak<parking_lot::Mutex<super::log_pipe::Tail>>,
    /// `wasi:keyvalue`: the plugin's data of the call's tenant.
    pub(super) keyvalue: KeyValueState,
}

impl CallState {
    /// A fresh state with what the plugin was granted and nothing else: its
    /// folders as preopens (those per tenant, the folder of the placement's
    /// tenant; where the client named roots, only those inside them), its
    /// variables, its key-value data of that tenant, no sockets, stdio to
    /// the log. A placement without a tenant (the host's own calls) gets
    /// neither folders per tenant nor the store.
    pub(super) fn new(
        plugin: &Arc<str>,
        context: Arc<dyn CallContext>,
        placement: &Placement,
        grants: &Arc<Grants>,
    ) -> anyhow::Result<Self> {
        let client_roots = placement.client_roots();
        // A call the host makes itself (a plugin's lists, shared by every
        // tenant) reaches no tenant's data: no folder of a root per
        // tenant, no store.
        let tenant = placement.tenant().map(|t| t.key());
        let limits = &grants.limits;
        let keyvalue = KeyValueState::new(
            Namespace {
                plugin: plugin.clone(),
                tenant: tenant.cloned().unwrap_or_else(|| Arc::from("")),
            },
            grants.keyvalue.clone().filter(|_| tenant.is_some()),
            limits.keyvalue,
        );
        let quota = Arc::new(Quota::new(limits.notifications_per_sec));
        let mut wasi = WasiCtxBuilder::new();
        let stderr = LogPipe::new(plugin.clone(), "stderr", quota.clone());
        let stderr_tail = stderr.tail();
        wasi.stdout(LogPipe::new(plugin.clone(), "stdout", quota.clone()))
            .stderr(stderr)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (key, value) in &grants.env {
            wasi.env(key, value.expose());
        }
        for dir in &grants.dirs {
            let host_path = match (&dir.tenants, tenant) {
                (Some(_), Some(tenant)) => dir.host_path.join(&**tenant),
                (Some(_), None) => continue,
                (None, _) => dir.host_path.clone(),
            };
            if client_roots.is_some_and(|roots| !roots.iter().any(|r| host_path.starts_with(r))) {
                continue;
            }
            let perms = if dir.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            let open = |e: std::io::Error| {
                anyhow::anyhow!("opening granted folder {}: {e}", host_path.display())
            };
            let folder = match (&dir.tenants, tenant) {
                (Some(tenants), Some(tenant)) => tenants.folder(tenant).map_err(open)?,
                _ => dir.dir.clone(),
            };
            let path = folder.open_path().map_err(open)?;
            wasi.preopened_dir(&path, &dir.guest_path, perms)
                .map_err(|e| open(std::io::Error::other(e.to_string())))?;
        }
        Ok(CallState {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            gate: HttpGate {
                plugin: plugin.clone(),
                grants: grants.clone(),
            },
            table: ResourceTable::new(),
            memory: MemoryCap::new(limits.memory_bytes),
            context,
            plugin: plugin.clone(),
            grants: grants.clone(),
            tool_call_use: Default::default(),
            quota,
            max_message_bytes: limits.max_message_bytes,
            turn: Turn::default(),
            wait_clock: Arc::default(),
            asked: 0,
            stderr: stderr_tail,
            keyvalue,
        })
    }
}

impl CallState {
    /// A state with no grants and no caller, for tests.
    #[cfg(test)]
    pub(super) fn for_tests() -> Self {
        CallState::new(
            &Arc::from("test"),
            Arc::new(super::context::Quiet {
                plugin: "test".into(),
            }),
            &Placement::local(None),
            &Arc::new(Grants::default()),
        )
        .expect("no grants to open")
    }

    /// Readies a state kept from an earlier call for a call from `context`:
    /// that call's deadline clock and question keys start afresh.
    pub(super) fn rebind(&mut self, context: Arc<dyn CallContext>) {
        self.context = context;
        self.wait_clock = Arc::default();
        self.asked = 0;
        self.tool_call_use = Default::default();
        self.keyvalue.rebind();
    }

    /// The store's key-value state with the resource table its buckets
    /// live in (for the `wasi:keyvalue` host functions).
    pub(super) fn keyvalue(&mut self) -> (&mut KeyValueState, &mut ResourceTable) {
        (&mut self.keyvalue, &mut self.table)
    }

    /// Lets go of the call that ended, for the state to be kept: its turn
    /// goes back, and its caller is no longer reachable (`idle` stands in).
    pub(super) fn park(&mut self, idle: Arc<dyn CallContext>) {
        self.turn = Turn::default();
        self.context = idle;
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.gate,
        }
    }
}

/// Lets an outgoing HTTP request through only to a granted host.
struct HttpGate {
    plugin: Arc<str>,
    grants: Arc<Grants>,
}

impl HttpGate {
    /// Why `request` may not go out, if it may not: its host must be
    /// granted, named once (no user info, a `Host` header only if it names
    /// the same authority), and its target in origin form.
    fn check<B>(&self, request: &http::Request<B>) -> Result<(), &'static str> {
        let uri = request.uri();
        let authority = uri.authority().ok_or("no host")?;
        if authority.as_str().contains('@') {
            return Err("user info in the authority");
        }
        let host = authority.host();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if !self.grants.hosts.iter().any(|p| p.matches(host)) {
            return Err("host not granted");
        }
        if uri
            .path_and_query()
            .is_some_and(|p| !p.as_str().starts_with('/'))
        {
            return Err("the target is not a path");
        }
        for value in request.headers().get_all(http::header::HOST) {
            if !value
                .to_str()
                .is_ok_and(|v| v.eq_ignore_ascii_case(authority.as_str()))
            {
                return Err("a Host header naming another host");
            }
        }
        Ok(())
    }
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        if let Err(why) = self.check(&request) {
            tracing::warn!(plugin = %self.plugin, uri = %request.uri(), "outgoing HTTP request denied: {why}");
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        tracing::debug!(plugin = %self.plugin, uri = %request.uri(), "outgoing HTTP request");
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = _> + Send>,
            ))
        })
    }
}

impl types::Host for CallState {}

impl CallState {
    /// Asks one question under a key of its own.
    pub(super) async fn ask_one(
        &mut self,
        kind: &str,
        question: host::Question,
    ) -> Result<host::Answer, host::InputError> {
        self.asked += 1;
        let key = format!("{kind}-{}", self.asked);
        self.ask(vec![(key, question)])
            .await
            .pop()
            .expect("one answer per question")
    }

    /// Asks the client questions, each under the plugin's key; the call's
    /// deadline does not run while it waits.
    pub(super) async fn ask(
        &mut self,
        questions: Vec<(String, host::Question)>,
    ) -> Vec<Result<host::Answer, host::InputError>> {
        let clock = self.wait_clock.clone();
        let _waiting = clock.wait();
        // Waiting for the client costs the plugin no slot: give it back,
        // and take one again (not counted against the deadline) to go on.
        self.turn.release();
        let answers = self.context.ask(questions).await;
        self.turn.take_again().await;
        answers
    }
}

/// One of a plugin's slots for calls that run at once, held by a call.
#[derive(Default)]
pub(super) struct Turn {
    slots: Option<Arc<tokio::sync::Semaphore>>,
    held: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Turn {
    /// Holds `permit`, a slot of `slots`.
    pub(super) fn hold(
        &mut self,
        slots: Arc<tokio::sync::Semaphore>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        self.slots = Some(slots);
        self.held = Some(permit);
    }

    pub(super) fn release(&mut self) {
        self.held = None;
    }

    pub(super) async fn take_again(&mut self) {
        if let (Some(slots), None) = (&self.slots, &self.held) {
            let permit = slots.clone().acquire_owned().await;
            self.held = Some(permit.expect("the semaphore is never closed"));
        }
    }
}

impl Drop for CallState {
    fn drop(&mut self) {
        let dropped = self.quota.dropped();
        if dropped > 0 {
            crate::metrics::metrics().dropped(crate::metrics::Dropped::PluginRate, dropped);
            tracing::warn!(
                plugin = %self.plugin,
                dropped,
                "the call's notifications over its limits were dropped"
            );
        }
    }
}
