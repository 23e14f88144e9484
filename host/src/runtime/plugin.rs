//! One loaded plugin: its compiled component, pre-linked for fast
//! instantiation, and the typed calls the host makes into it.

use super::bindings::exports::wasm_mcp::plugin::{completions, prompts, resources, tools};
use super::bindings::wasm_mcp::plugin::types;
use super::context::{CallContext, Quiet};
use super::engine::Tier;
use super::grants::Grants;
use super::state::CallState;
use super::wait_clock::WaitClock;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, InstancePre};
use wasmtime::{Engine, Store};

/// Which of the contract's interfaces a component exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exports {
    /// `tools`
    pub tools: bool,
    /// `resources`
    pub resources: bool,
    /// `prompts`
    pub prompts: bool,
    /// `completions`
    pub completions: bool,
}

/// Why a call into a plugin produced no answer. Each is contained to the
/// one call: the plugin and the host keep serving.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The component does not export the interface the call needs.
    #[error("the plugin does not export the `{0}` interface")]
    NotExported(&'static str),
    /// The plugin trapped (panic, `unreachable`, out of memory, ...).
    #[error("the plugin failed: {0}")]
    Trap(String),
    /// The call ran past its deadline and was interrupted.
    #[error("the call ran longer than {0:?} and was stopped")]
    Timeout(Duration),
    /// The caller cancelled the call and it was interrupted.
    #[error("the call was cancelled")]
    Cancelled,
    /// The call could not be set up (a granted folder is missing, ...).
    #[error("the call could not be prepared: {0}")]
    Setup(String),
}

impl CallError {
    fn from_wasm(error: wasmtime::Error) -> Self {
        let detail = match error.downcast_ref::<wasmtime::Trap>() {
            Some(trap) => trap.to_string(),
            None => format!("{error:#}")
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        };
        CallError::Trap(detail)
    }
}

/// Everything a plugin lists, asked once at load.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// From `list-tools`.
    pub tools: Vec<tools::Tool>,
    /// From `list-resources`.
    pub resources: Vec<resources::Resource>,
    /// From `list-resource-templates`.
    pub templates: Vec<resources::ResourceTemplate>,
    /// From `list-prompts`.
    pub prompts: Vec<prompts::Prompt>,
}

/// A compiled, linked plugin, ready to instantiate once per call.
pub struct LoadedPlugin {
    /// The engine that compiled it, which its stores belong to.
    engine: Engine,
    /// Compiled by the baseline compiler, to be replaced by an optimised build.
    quick: bool,
    name: Arc<str>,
    hash: String,
    grants: Arc<Grants>,
    /// One permit per call that may run at once.
    turns: Semaphore,
    pre: InstancePre<CallState>,
    tools: Option<tools::GuestIndices>,
    resources: Option<resources::GuestIndices>,
    prompts: Option<prompts::GuestIndices>,
    completions: Option<completions::GuestIndices>,
}

impl LoadedPlugin {
    pub(super) fn link(
        tier: &Tier,
        name: Arc<str>,
        component: Component,
        hash: String,
        grants: Grants,
        quick: bool,
    ) -> anyhow::Result<Arc<Self>> {
        let pre = tier.linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!("the component needs something the host does not provide: {e:#}")
        })?;
        let tools = tools::GuestIndices::new(&pre).ok();
        let resources = resources::GuestIndices::new(&pre).ok();
        let prompts = prompts::GuestIndices::new(&pre).ok();
        let completions = completions::GuestIndices::new(&pre).ok();
        if tools.is_none() && resources.is_none() && prompts.is_none() {
            anyhow::bail!(
                "the component exports none of wasm-mcp:plugin/tools, resources or prompts @0.1.0"
            );
        }
        Ok(Arc::new(LoadedPlugin {
            engine: tier.engine.clone(),
            quick,
            name,
            hash,
            turns: Semaphore::new(grants.limits.max_concurrent_calls.max(1)),
            grants: Arc::new(grants),
            pre,
            tools,
            resources,
            prompts,
            completions,
        }))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The SHA-256 of the component's bytes, in hex.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Whether the baseline compiler built it (see [`crate::runtime::Runtime::load_quick`]).
    pub fn is_quick(&self) -> bool {
        self.quick
    }

    /// What the plugin was granted.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Which interfaces the component exports.
    pub fn exports(&self) -> Exports {
        Exports {
            tools: self.tools.is_some(),
            resources: self.resources.is_some(),
            prompts: self.prompts.is_some(),
            completions: self.completions.is_some(),
        }
    }

    fn store(&self, context: Arc<dyn CallContext>) -> Result<Store<CallState>, CallError> {
        let state = CallState::new(&self.name, context, &self.grants)
            .map_err(|e| CallError::Setup(format!("{e:#}")))?;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        Ok(store)
    }

    /// Runs `call` under the deadline and the caller's cancellation. The
    /// plugin yields at every epoch tick, so either one can stop it.
    /// Time spent waiting for the client's answers does not count.
    async fn guarded<R>(
        &self,
        context: &Arc<dyn CallContext>,
        clock: Arc<WaitClock>,
        call: impl Future<Output = wasmtime::Result<R>>,
    ) -> Result<R, CallError> {
        let timeout = self.grants.limits.call_timeout;
        // Wait for a turn (the client may give up meanwhile); the deadline
        // starts when the call does.
        let _turn = tokio::select! {
            turn = self.turns.acquire() => turn.expect("the semaphore is never closed"),
            () = context.cancelled() => return Err(CallError::Cancelled),
        };
        let start = tokio::time::Instant::now();
        tokio::pin!(call);
        loop {
            let (waiting, waited) = clock.waited();
            let wake = if waiting {
                tokio::time::Instant::now() + timeout
            } else {
                start + timeout + waited
            };
            tokio::select! {
                result = &mut call => return result.map_err(CallError::from_wasm),
                () = tokio::time::sleep_until(wake) => {
                    let (waiting, waited) = clock.waited();
                    if !waiting && start.elapsed() >= timeout + waited {
                        return Err(CallError::Timeout(timeout));
                    }
                }
                () = context.cancelled() => return Err(CallError::Cancelled),
            }
        }
    }

    /// Asks every `list-*` export, in one instance.
    pub async fn list(&self) -> Result<Listing, CallError> {
        let context: Arc<dyn CallContext> = Arc::new(Quiet {
            plugin: self.name.to_string(),
        });
        let mut store = self.store(context.clone())?;
        self.guarded(&context, store.data().wait_clock.clone(), async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            let mut listing = Listing::default();
            if let Some(idx) = &self.tools {
                listing.tools = idx
                    .load(&mut store, &instance)?
                    .call_list_tools(&mut store)
                    .await?;
            }
            if let Some(idx) = &self.resources {
                let guest = idx.load(&mut store, &instance)?;
                listing.resources = guest.call_list_resources(&mut store).await?;
                listing.templates = guest.call_list_resource_templates(&mut store).await?;
            }
            if let Some(idx) = &self.prompts {
                listing.prompts = idx
                    .load(&mut store, &instance)?
                    .call_list_prompts(&mut store)
                    .await?;
            }
            Ok(listing)
        })
        .await
    }

    /// Asks `list-tools` again.
    pub async fn list_tools(&self) -> Result<Vec<tools::Tool>, CallError> {
        Ok(self.list().await?.tools)
    }

    /// Calls tool `name` with JSON `arguments` in a fresh instance.
    pub async fn call_tool(
        &self,
        context: Arc<dyn CallContext>,
        name: &str,
        arguments: &str,
    ) -> Result<Result<tools::CallResult, types::Error>, CallError> {
        let idx = self.tools.as_ref().ok_or(CallError::NotExported("tools"))?;
        let (name, arguments) = (name.to_owned(), arguments.to_owned());
        let mut store = self.store(context.clone())?;
        self.guarded(&context, store.data().wait_clock.clone(), async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            idx.load(&mut store, &instance)?
                .call_call_tool(&mut store, &name, &arguments)
                .await
        })
        .await
    }

    /// Reads the resource at `uri` in a fresh instance.
    pub async fn read_resource(
        &self,
        context: Arc<dyn CallContext>,
        uri: &str,
    ) -> Result<Result<Vec<types::ResourceContents>, types::Error>, CallError> {
        let idx = self
            .resources
            .as_ref()
            .ok_or(CallError::NotExported("resources"))?;
        let mut store = self.store(context.clone())?;
        self.guarded(&context, store.data().wait_clock.clone(), async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            idx.load(&mut store, &instance)?
                .call_read_resource(&mut store, uri)
                .await
        })
        .await
    }

    /// Renders prompt `name` in a fresh instance.
    pub async fn get_prompt(
        &self,
        context: Arc<dyn CallContext>,
        name: &str,
        arguments: &[(String, String)],
    ) -> Result<Result<prompts::PromptResult, types::Error>, CallError> {
        let idx = self
            .prompts
            .as_ref()
            .ok_or(CallError::NotExported("prompts"))?;
        let mut store = self.store(context.clone())?;
        self.guarded(&context, store.data().wait_clock.clone(), async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            idx.load(&mut store, &instance)?
                .call_get_prompt(&mut store, name, arguments)
                .await
        })
        .await
    }

    /// Asks for completions in a fresh instance.
    pub async fn complete(
        &self,
        context: Arc<dyn CallContext>,
        request: &completions::CompletionRequest,
    ) -> Result<Result<completions::Completion, types::Error>, CallError> {
        let idx = self
            .completions
            .as_ref()
            .ok_or(CallError::NotExported("completions"))?;
        let mut store = self.store(context.clone())?;
        self.guarded(&context, store.data().wait_clock.clone(), async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            idx.load(&mut store, &instance)?
                .call_complete(&mut store, request)
                .await
        })
        .await
    }
}
