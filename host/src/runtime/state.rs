//! The data of one store (one call): WASI state, limits, and the caller's
//! context that the `host` imports report to.

use super::bindings::wasm_mcp::plugin::{host, types};
use super::context::CallContext;
use super::grants::Grants;
use super::log_pipe::LogPipe;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// What a store holds for the duration of one call.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    context: Arc<dyn CallContext>,
}

impl CallState {
    /// A fresh state with what the plugin was granted and nothing else: its
    /// folders as preopens, its variables, no sockets, stdio to the log.
    pub fn new(
        plugin: &Arc<str>,
        context: Arc<dyn CallContext>,
        grants: &Grants,
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
        for dir in &grants.dirs {
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
            table: ResourceTable::new(),
            limits,
            context,
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
        self.context.elicit(request).await
    }

    async fn sample(
        &mut self,
        request: host::SamplingRequest,
    ) -> Result<host::SamplingResponse, host::InputError> {
        self.context.sample(request).await
    }

    async fn roots(&mut self) -> Result<Vec<host::Root>, host::InputError> {
        self.context.roots().await
    }
}
