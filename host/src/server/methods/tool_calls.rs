//! Tools called from inside a plugin's call (code mode, the contract's
//! `tool-calls`): a plugin granted `call_tools` searches and calls tools
//! for the caller of the call it serves. Each call is decided as that
//! caller's own `tools/call` would be (access rules, profiles, rates, the
//! tool's schema), and as the plugin's grant allows; it runs in the tool's
//! own sandbox, within the calling plugin's call (never as a task, never
//! asking the client), is audited naming the call that made it, and ends
//! when that call is cancelled. A plugin never reaches itself, directly or
//! through another, and calls nest no deeper than the calling plugin's
//! `tool_call_depth`.

use super::{tools, Answer, Request};
use crate::protocol::{ErrorCode, Method, RequestId, RpcError};
use crate::registry::ToolEntry;
use crate::runtime::tool_call_types::{CallError, ToolInfo};
use crate::runtime::{BoxFuture, ToolCall, ToolCallGrant};
use crate::server::access::{Caller, Item};
use crate::server::call::ToolCaller;
use crate::server::prepared::List;
use crate::server::search;
use crate::server::session::Era;
use crate::server::{Connection, Outbox};
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// How one plugin's call reaches tools: for the request it serves.
pub(super) struct PluginCaller {
    conn: Arc<Connection>,
    caller: Arc<Caller>,
    era: Era,
    /// The request's id (an inner call answers no one by it).
    id: RequestId,
    /// Where the request's notifications go (the tools' log messages).
    reply: Outbox,
    /// The request's trace context, which the tools' spans and audit
    /// lines continue.
    traceparent: Option<Value>,
    /// The plugins on the way here, outermost first: the last one calls.
    chain: Vec<String>,
    /// The call that makes these calls, `PLUGIN.TOOL`, for the audit log.
    parent: String,
    /// How deep calls from plugins may nest here: the least
    /// `tool_call_depth` of the plugins on the way.
    max_depth: u32,
    /// The runtime the host serves requests on (a plugin's host functions
    /// run on its own).
    runtime: tokio::runtime::Handle,
}

/// How a call of `entry` for `request` reaches tools, when its plugin was
/// granted `call_tools`; `chain` holds the plugins whose calls led here,
/// which allow calls to nest `max_depth` deep at most.
pub(super) fn caller_for(
    request: &Request<'_>,
    entry: &ToolEntry,
    chain: &[String],
    max_depth: u32,
) -> Option<Arc<dyn ToolCaller>> {
    let grants = entry.plugin.grants();
    grants.tool_calls.as_ref()?;
    let max_depth = max_depth.min(grants.limits.tool_call_depth);
    let mut chain = chain.to_vec();
    chain.push(entry.plugin.name().to_owned());
    let traceparent = request
        .params
        .get("_meta")
        .and_then(|meta| meta.get("traceparent"))
        .cloned();
    Some(Arc::new(PluginCaller {
        conn: request.conn.clone(),
        caller: request.caller.clone(),
        era: request.era.clone(),
        id: request.id.clone(),
        reply: request.reply.clone(),
        traceparent,
        chain,
        parent: format!("{}.{}", entry.plugin.name(), entry.tool.name),
        max_depth,
        runtime: tokio::runtime::Handle::current(),
    }))
}

impl PluginCaller {
    /// The calling plugin.
    fn plugin(&self) -> &str {
        self.chain.last().expect("a chain holds the calling plugin")
    }

    /// Refuses a call of `entry` that `grant` does not name, that reaches
    /// a plugin already on the way here, or that nests deeper than the
    /// plugins on the way allow (`depth`, the calling plugin's own).
    pub(super) fn may_call(
        &self,
        entry: &ToolEntry,
        grant: &ToolCallGrant,
        depth: u32,
    ) -> Result<(), RpcError> {
        let (plugin, tool) = (entry.plugin.name(), entry.tool.name.as_str());
        let refused = |message: String| Err(RpcError::new(ErrorCode::InvalidRequest, message));
        if !grant.allows(plugin, tool) {
            let me = self.plugin();
            return refused(format!(
                "plugin {me} may not call tool {}: [plugins.{me}] call_tools names no pattern \
                 that matches {plugin}.{tool}",
                entry.name
            ));
        }
        if self.chain.iter().any(|p| p == plugin) {
            return refused(format!(
                "tool {} is plugin {plugin}'s, which is already on the way here ({} → {plugin}): \
                 a plugin never reaches itself",
                entry.name,
                self.chain.join(" → ")
            ));
        }
        // The calling plugin's call is at depth chain.len() - 1.
        let depth = depth.min(self.max_depth);
        if self.chain.len() > depth as usize {
            return refused(format!(
                "calling tool {} from {} would nest calls {} deep: the plugins on the way \
                 allow {depth} (tool_call_depth)",
                entry.name,
                self.chain.join(" → "),
                self.chain.len(),
            ));
        }
        Ok(())
    }

    /// How the call of `entry` made from here reaches tools, when its
    /// plugin was granted `call_tools`.
    pub(super) fn next(
        &self,
        request: &Request<'_>,
        entry: &ToolEntry,
    ) -> Option<Arc<dyn ToolCaller>> {
        caller_for(request, entry, &self.chain, self.max_depth)
    }

    /// The result of tool `name` with `arguments` (JSON text), called from
    /// here under `grant` and `depth`.
    async fn run(
        self: Arc<Self>,
        name: String,
        arguments: String,
        grant: ToolCallGrant,
        depth: u32,
        cancel: CancellationToken,
    ) -> Result<String, CallError> {
        let arguments: Value = match serde_json::from_str(&arguments) {
            Ok(object @ Value::Object(_)) => object,
            Ok(_) => {
                return Err(error(&RpcError::invalid_params(
                    "arguments must be a JSON object",
                )))
            }
            Err(e) => {
                return Err(error(&RpcError::invalid_params(format!(
                    "arguments are not JSON: {e}"
                ))))
            }
        };
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.clone()));
        params.insert("arguments".into(), arguments);
        if let Some(traceparent) = &self.traceparent {
            let mut meta = Map::new();
            meta.insert("traceparent".into(), traceparent.clone());
            params.insert("_meta".into(), Value::Object(meta));
        }
        let reached = crate::server::audit::Reached::default();
        let request = Request {
            conn: &self.conn,
            id: &self.id,
            params: &params,
            era: &self.era,
            cancel: cancel.clone(),
            reply: &self.reply,
            caller: &self.caller,
            reached: &reached,
        };
        let started = std::time::Instant::now();
        let catalogue = self.conn.server.registry.catalogue();
        let from = Within {
            caller: &self,
            grant: &grant,
            depth,
        };
        let answered =
            tools::call_from_plugin(&request, &catalogue, &name, &params["arguments"], &from).await;
        if let Some(audit) = &self.conn.server.options.audit {
            audit.served(crate::server::audit::Served {
                principal: self.caller.principal.as_deref(),
                tenant: &self.caller.tenant,
                method: Some(Method::CallTool),
                params: &params,
                outcome: match &answered {
                    Ok(Answer::Result(result)) => {
                        crate::server::audit::Outcome::answered(Some(result))
                    }
                    Ok(_) => crate::server::audit::Outcome::answered(None),
                    Err(error) => crate::server::audit::Outcome::failed(error),
                },
                error: answered.as_ref().err(),
                reached: &reached,
                took: started.elapsed(),
                span: &tracing::Span::current(),
                parent: Some(&self.parent),
            });
        }
        match answered {
            Ok(Answer::Result(result)) => Ok(result.to_string()),
            Ok(_) => Err(CallError {
                code: ErrorCode::InternalError.code() as i32,
                message: "the tool call was cancelled".into(),
            }),
            Err(rpc) => Err(error(&rpc)),
        }
    }
}

/// A plugin caller with the grant and depth of the call being decided.
pub(super) struct Within<'a> {
    caller: &'a Arc<PluginCaller>,
    grant: &'a ToolCallGrant,
    depth: u32,
}

impl Within<'_> {
    /// See [`PluginCaller::may_call`].
    pub(super) fn may_call(&self, entry: &ToolEntry) -> Result<(), RpcError> {
        self.caller.may_call(entry, self.grant, self.depth)
    }

    /// See [`PluginCaller::next`].
    pub(super) fn next(
        &self,
        request: &Request<'_>,
        entry: &ToolEntry,
    ) -> Option<Arc<dyn ToolCaller>> {
        self.caller.next(request, entry)
    }
}

/// `rpc` as the contract's error: its code and message.
fn error(rpc: &RpcError) -> CallError {
    CallError {
        code: i32::try_from(rpc.code.code()).unwrap_or(i32::MIN),
        message: rpc.message.clone(),
    }
}

impl ToolCaller for PluginCaller {
    fn search(&self, grant: &ToolCallGrant, query: &str, limit: usize) -> Vec<ToolInfo> {
        let server = &self.conn.server;
        let catalogue = server.registry.catalogue();
        let policy = &server.options.access;
        let view = policy.view(&self.caller);
        let callable = |i: usize| {
            let entry = &catalogue.tools[i];
            let item = Item::tool(entry.plugin.name(), &entry.tool);
            !search::is_reserved(&entry.name)
                && grant.allows(entry.plugin.name(), &entry.tool.name)
                && !self.chain.iter().any(|p| p == entry.plugin.name())
                && view
                    .as_ref()
                    .is_none_or(|view| view.sees(&policy.rule(&item), &item))
        };
        let found: Vec<usize> = if query.trim().is_empty() {
            (0..catalogue.tools.len())
                .filter(|&i| callable(i))
                .take(limit)
                .collect()
        } else {
            let lists = server
                .prepared
                .of(&catalogue, List::Tools(true), &server.options);
            lists.index(&catalogue).rank(query, callable, limit)
        };
        found
            .into_iter()
            .map(|i| {
                let entry = &catalogue.tools[i];
                ToolInfo {
                    name: entry.name.clone(),
                    plugin: entry.plugin.name().to_owned(),
                    description: entry.tool.description.clone(),
                    input_schema: entry.input_schema.to_string(),
                    output_schema: entry.tool.output_schema.clone(),
                }
            })
            .collect()
    }

    fn call(
        self: Arc<Self>,
        call: ToolCall,
        cancelled: CancellationToken,
    ) -> BoxFuture<Result<String, CallError>> {
        let ToolCall {
            name,
            arguments,
            grant,
            depth,
        } = call;
        // Cancelled with the calling plugin's call, or when that call stops
        // waiting (its deadline passed).
        let cancel = cancelled.child_token();
        let span = tracing::debug_span!(
            "mcp.tool_call_from_plugin",
            otel.name = "tools/call",
            mcp.plugin = %self.plugin(),
        );
        let runtime = self.runtime.clone();
        let running = runtime.spawn(
            self.run(name, arguments, grant, depth, cancel.clone())
                .instrument(span),
        );
        Box::pin(async move {
            let _cancel_when_dropped = cancel.drop_guard();
            running.await.unwrap_or_else(|_| {
                Err(CallError {
                    code: ErrorCode::InternalError.code() as i32,
                    message: "the tool call failed inside the host".into(),
                })
            })
        })
    }
}
