//! The typed calls the host makes into a plugin: its lists at load, and
//! each MCP request's tool, resource, prompt or completion.

use super::bindings::exports::wasm_mcp::plugin::{completions, prompts, tools};
use super::bindings::wasm_mcp::plugin::types;
use super::context::{CallContext, Quiet};
use super::plain::PlainTools;
use super::slots::Patience;
use super::{CallError, Listing, LoadedPlugin};
use std::sync::Arc;
use std::time::Duration;

impl LoadedPlugin {
    /// Asks every `list-*` export, in one instance, under the load deadline.
    pub async fn list(&self) -> Result<Listing, CallError> {
        let context: Arc<dyn CallContext> = Arc::new(Quiet {
            plugin: self.name.to_string(),
        });
        let f = &self.functions;
        self.run(
            context,
            self.grants.limits.load_timeout,
            // However long a slot takes to free; a warning at most each second.
            Patience::Load(self.grants.limits.load_timeout.max(Duration::from_secs(1))),
            async |store, instance| {
                f.check(store, instance)?;
                let mut listing = Listing::default();
                if let Some(plain) = &f.plain {
                    listing.tools = plain.tools();
                }
                if let Some((list, _)) = &f.tools {
                    listing.tools = list.call(store, instance, ()).await?;
                }
                if let Some((resources, templates, _)) = &f.resources {
                    listing.resources = resources.call(store, instance, ()).await?;
                    listing.templates = templates.call(store, instance, ()).await?;
                }
                if let Some((list, _)) = &f.prompts {
                    listing.prompts = list.call(store, instance, ()).await?;
                }
                Ok(listing)
            },
        )
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
        if let Some(plain) = &self.functions.plain {
            return self.call_plain(plain, context, name, arguments).await;
        }
        let (_, export) = self
            .functions
            .tools
            .as_ref()
            .ok_or(CallError::NotExported("tools"))?;
        let timeout = self.grants.limits.call_timeout;
        self.run(context, timeout, Patience::Call, async |store, instance| {
            export.call(store, instance, (name, arguments)).await
        })
        .await
    }

    /// Calls a plain component's function. What wasmtime copies out of the
    /// instance for the result is capped at four times the result limit
    /// (a lifted value takes more room than its JSON).
    async fn call_plain(
        &self,
        plain: &PlainTools,
        context: Arc<dyn CallContext>,
        name: &str,
        arguments: &str,
    ) -> Result<Result<tools::CallResult, types::Error>, CallError> {
        let limits = &self.grants.limits;
        let max_bytes = limits.max_result_bytes;
        self.run(
            context,
            limits.call_timeout,
            Patience::Call,
            async |store, instance| {
                store.set_hostcall_fuel(max_bytes.saturating_mul(4));
                plain
                    .call(store, instance, name, arguments, max_bytes)
                    .await
            },
        )
        .await
        .map_err(|error| match error {
            CallError::Trap(detail) if detail.starts_with("too much data is being copied") => {
                CallError::TooLarge(format!(
                    "the result is over this plugin's limit of {max_bytes} bytes"
                ))
            }
            other => other,
        })
    }

    /// Reads the resource at `uri` in a fresh instance.
    pub async fn read_resource(
        &self,
        context: Arc<dyn CallContext>,
        uri: &str,
    ) -> Result<Result<Vec<types::ResourceContents>, types::Error>, CallError> {
        let (_, _, export) = self
            .functions
            .resources
            .as_ref()
            .ok_or(CallError::NotExported("resources"))?;
        let timeout = self.grants.limits.call_timeout;
        self.run(context, timeout, Patience::Call, async |store, instance| {
            export.call(store, instance, (uri,)).await
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
        let (_, export) = self
            .functions
            .prompts
            .as_ref()
            .ok_or(CallError::NotExported("prompts"))?;
        let timeout = self.grants.limits.call_timeout;
        self.run(context, timeout, Patience::Call, async |store, instance| {
            export.call(store, instance, (name, arguments)).await
        })
        .await
    }

    /// Asks for completions in a fresh instance.
    pub async fn complete(
        &self,
        context: Arc<dyn CallContext>,
        request: &completions::CompletionRequest,
    ) -> Result<Result<completions::Completion, types::Error>, CallError> {
        let export = self
            .functions
            .completions
            .as_ref()
            .ok_or(CallError::NotExported("completions"))?;
        let timeout = self.grants.limits.call_timeout;
        self.run(context, timeout, Patience::Call, async |store, instance| {
            export.call(store, instance, (request,)).await
        })
        .await
    }
}
