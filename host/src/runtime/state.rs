//! The data of one store (one call): WASI state (with the plugin's grants),
//! outbound HTTP gated by granted hosts, limits, and the caller's context
//! that the `host` imports report to.

use super::bindings::wasm_mcp::plugin::{host, types};
use super::context::CallContext;
use super::grants::{DirGrant, Grants};
use super::log_pipe::LogPipe;
use super::wait_clock::WaitClock;
use std::future::Future;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

/// What a store holds for the duration of one call.
pub struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    gate: HttpGate,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    context: Arc<dyn CallContext>,
    /// Time spent waiting for the client, which the deadline does not count.
    pub(super) wait_clock: Arc<WaitClock>,
    /// Questions asked one at a time so far (for their keys).
    asked: u32,
}

impl CallState {
    /// A fresh state with what the plugin was granted and nothing else: its
    /// folders as preopens, its variables, no sockets, stdio to the log.
    pub fn new(
        plugin: &Arc<str>,
        context: Arc<dyn CallContext>,
        grants: &Arc<Grants>,
    ) -> anyhow::Result<Self> {
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(LogPipe::new(plugin.clone(), "stdout"))
            .stderr(LogPipe::new(plugin.clone(), "stderr"))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (key, value) in &grants.env {
            wasi.env(key, value);
        }
        // Where the client named its roots, only granted folders inside them.
        let client_roots = context.client_roots();
        let visible = |dir: &&DirGrant| {
            client_roots
                .as_ref()
                .is_none_or(|roots| roots.iter().any(|root| dir.host_path.starts_with(root)))
        };
        for dir in grants.dirs.iter().filter(visible) {
            let perms = if dir.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            wasi.preopened_dir(&dir.host_path, &dir.guest_path, perms)
                .map_err(|e| {
                    anyhow::anyhow!("opening granted folder {}: {e}", dir.host_path.display())
                })?;
        }
        let limits = StoreLimitsBuilder::new()
            .memory_size(grants.limits.memory_bytes)
            .trap_on_grow_failure(true)
            .build();
        Ok(CallState {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            gate: HttpGate {
                plugin: plugin.clone(),
                grants: grants.clone(),
            },
            table: ResourceTable::new(),
            limits,
            context,
            wait_clock: Arc::default(),
            asked: 0,
        })
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
        let host = request.uri().host().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if !self
            .grants
            .hosts
            .iter()
            .any(|pattern| pattern.matches(host))
        {
            tracing::warn!(plugin = %self.plugin, host, "outgoing HTTP request denied: host not granted");
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

impl host::Host for CallState {
    fn log(&mut self, level: types::LogLevel, message: String) -> wasmtime::Result<()> {
        self.context.log(level, message);
        Ok(())
    }

    fn progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> wasmtime::Result<()> {
        self.context.progress(progress, total, message);
        Ok(())
    }

    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.context.is_cancelled())
    }

    fn continue_as_task(&mut self) -> wasmtime::Result<bool> {
        Ok(self.context.continue_as_task())
    }

    fn list_changed(&mut self, kind: host::ListKind) -> wasmtime::Result<()> {
        self.context.list_changed(kind);
        Ok(())
    }

    fn resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
        self.context.resource_updated(uri);
        Ok(())
    }

    async fn elicit(
        &mut self,
        request: host::ElicitationRequest,
    ) -> Result<host::ElicitationResponse, host::InputError> {
        match self
            .ask_one("elicitation", host::Question::Elicit(request))
            .await?
        {
            host::Answer::Elicit(answer) => Ok(answer),
            _ => unreachable!("an elicitation is answered by an elicitation"),
        }
    }

    async fn sample(
        &mut self,
        request: host::SamplingRequest,
    ) -> Result<host::SamplingResponse, host::InputError> {
        match self
            .ask_one("sampling", host::Question::Sample(request))
            .await?
        {
            host::Answer::Sample(answer) => Ok(answer),
            _ => unreachable!("a sampling request is answered by a sampling result"),
        }
    }

    async fn roots(&mut self) -> Result<Vec<host::Root>, host::InputError> {
        match self.ask_one("roots", host::Question::Roots).await? {
            host::Answer::Roots(roots) => Ok(roots),
            _ => unreachable!("roots/list is answered by roots"),
        }
    }

    async fn ask(
        &mut self,
        questions: Vec<(String, host::Question)>,
    ) -> Vec<Result<host::Answer, host::InputError>> {
        let clock = self.wait_clock.clone();
        let _waiting = clock.wait();
        self.context.ask(questions).await
    }
}

impl CallState {
    /// Asks one question under a key of its own.
    async fn ask_one(
        &mut self,
        kind: &str,
        question: host::Question,
    ) -> Result<host::Answer, host::InputError> {
        self.asked += 1;
        let key = format!("{kind}-{}", self.asked);
        let clock = self.wait_clock.clone();
        let _waiting = clock.wait();
        self.context
            .ask(vec![(key, question)])
            .await
            .pop()
            .expect("one answer per question")
    }
}
