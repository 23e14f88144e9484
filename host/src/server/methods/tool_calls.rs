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
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
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
    /// The request's `_meta` but its progress token: its trace context,
    /// and on 2026-07-28 its client's capabilities.
    meta: Option<Value>,
    /// The plugins on the way here, outermost first: the last one calls.
    chain: Vec<String>,
    /// The call that makes these calls, `PLUGIN.TOOL`, for the audit log.
    parent: String,
    /// How deep calls from plugins may nest here: the least
    /// `tool_call_depth` of the plugins on the way.
    max_depth: u32,
    /// What every tool call made for the request may use in all, at
    /// whatever depth: the outermost calling plugin's bounds.
    budget: Arc<Budget>,
    /// The runtime the host serves requests on (a plugin's host functions
    /// run on its own).
    runtime: tokio::runtime::Handle,
}

/// How a call of `entry` for `request` reaches tools, when its plugin was
/// granted `call_tools`; `chain` holds the plugins whose calls led here,
/// which allow calls to nest `max_depth` deep at most and share `budget`
/// (none: this is the outermost, whose bounds start one).
pub(super) fn caller_for(
    request: &Request<'_>,
    entry: &ToolEntry,
    chain: &[String],
    max_depth: u32,
    budget: Option<&Arc<Budget>>,
) -> Option<Arc<dyn ToolCaller>> {
    let grants = entry.plugin.grants();
    grants.tool_calls.as_ref()?;
    let limits = &grants.limits;
    let max_depth = max_depth.min(limits.tool_call_depth);
    let budget = budget.cloned().unwrap_or_else(|| {
        Arc::new(Budget {
            calls: AtomicU32::new(0),
            bytes: AtomicUsize::new(0),
            max_calls: limits.tool_calls,
            max_bytes: limits.tool_call_bytes,
        })
    });
    let mut chain = chain.to_vec();
    chain.push(entry.plugin.name().to_owned());
    let meta = request.params.get("_meta").map(|meta| {
        let mut meta = meta.clone();
        if let Some(meta) = meta.as_object_mut() {
            meta.remove("progressToken");
        }
        meta
    });
    Some(Arc::new(PluginCaller {
        conn: request.conn.clone(),
        caller: request.caller.clone(),
        era: request.era.clone(),
        id: request.id.clone(),
        meta,
        chain,
        parent: format!("{}.{}", entry.plugin.name(), entry.tool.name),
        max_depth,
        budget,
        runtime: tokio::runtime::Handle::current(),
    }))
}

/// What the tool calls made for one request may use in all (the calls
/// of plugins those tools run in included).
pub(super) struct Budget {
    calls: AtomicU32,
    bytes: AtomicUsize,
    max_calls: u32,
    max_bytes: usize,
}

impl Budget {
    /// Takes one call moving `bytes`, or says which bound it is over.
    fn take_call(&self, bytes: usize) -> Result<(), String> {
        let made = self.calls.fetch_add(1, Ordering::Relaxed);
        if made >= self.max_calls {
            return Err(format!(
                "this request's tool calls reached their limit ({} calls, tool_calls), \
                 counting those of the tools it called",
                self.max_calls
            ));
        }
        self.take_bytes(bytes)
    }

    /// Takes `bytes` more, or says they are over the bound.
    fn take_bytes(&self, bytes: usize) -> Result<(), String> {
        let moved = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if moved > self.max_bytes {
            return Err(format!(
                "this request's tool calls moved {moved} bytes, over their limit of {} \
                 (tool_call_mb), counting those of the tools it called",
                self.max_bytes
            ));
        }
        Ok(())
    }
}

/// A refusal of a tool call by the plugin's grant or the bounds: audited
/// as a refusal, `reason` saying which.
fn refusal(message: String, reason: &str) -> RpcError {
    RpcError::new(ErrorCode::InvalidRequest, message)
        .with_data(serde_json::json!({ "reason": reason }))
}

impl PluginCaller {
    /// The calling plugin.
    fn plugin(&self) -> &str {
        self.chain.last().expect("a chain holds the calling plugin")
    }

    /// Audits a call of `name` refused before it was decided (a bound).
    fn refused(&self, name: &str, error: &RpcError) {
        let Some(audit) = &self.conn.server.options.audit else {
            return;
        };
        let reached = crate::server::audit::Reached::default();
        if let Some(entry) = self.conn.server.registry.catalogue().tool(name) {
            reached.set(&Item::tool(entry.plugin.name(), &entry.tool));
        }
        let mut params = Map::new();
        params.insert(
            "name".into(),
            Value::String(crate::text::head(name, 512).to_owned()),
        );
        audit.served(crate::server::audit::Served {
            principal: self.caller.principal.as_deref(),
            tenant: &self.caller.tenant,
            method: Some(Method::CallTool),
            params: &params,
            outcome: crate::server::audit::Outcome::failed(error),
            error: Some(error),
            reached: &reached,
            took: std::time::Duration::ZERO,
            span: &tracing::Span::current(),
            parent: Some(&self.parent),
        });
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
        if !grant.allows(plugin, tool) {
            let me = self.plugin();
            return Err(refusal(
                format!(
                    "plugin {me} may not call tool {}: [plugins.{me}] call_tools names no pattern \
                 that matches {plugin}.{tool}",
                    entry.name
                ),
                "call_tools",
            ));
        }
        if self.chain.iter().any(|p| p == plugin) {
            return Err(refusal(
                format!(
                "tool {} is plugin {plugin}'s, which is already on the way here ({} → {plugin}): \
                 a plugin never reaches itself",
                entry.name,
                self.chain.join(" → ")
            ),
                "self",
            ));
        }
        // The calling plugin's call is at depth chain.len() - 1.
        let depth = depth.min(self.max_depth);
        if self.chain.len() > depth as usize {
            return Err(refusal(
                format!(
                    "calling tool {} from {} would nest calls {} deep: the plugins on the way \
                 allow {depth} (tool_call_depth)",
                    entry.name,
                    self.chain.join(" → "),
                    self.chain.len(),
                ),
                "depth",
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
        caller_for(
            request,
            entry,
            &self.chain,
            self.max_depth,
            Some(&self.budget),
        )
    }

    /// The result of tool `name` with `arguments` (JSON text), called from
    /// here under `grant` and `depth`.
    async fn run(
        self: Arc<Self>,
        call: ToolCall,
        out: Outbox,
        cancel: CancellationToken,
    ) -> Result<String, CallError> {
        let ToolCall {
            name,
            arguments,
            grant,
            depth,
        } = call;
        if let Err(why) = self.budget.take_call(name.len() + arguments.len()) {
            let error = refusal(why, "bound");
            self.refused(&name, &error);
            return Err(self::error(&error));
        }
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
        if let Some(meta) = &self.meta {
            params.insert("_meta".into(), meta.clone());
        }
        let reached = crate::server::audit::Reached::default();
        let request = Request {
            conn: &self.conn,
            id: &self.id,
            params: &params,
            era: &self.era,
            cancel: cancel.clone(),
            reply: &out,
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
        // A search counts as a call (it finds nothing past the bound).
        if self.budget.take_call(query.len()).is_err() {
            return Vec::new();
        }
        let server = &self.conn.server;
        let catalogue = server.registry.catalogue();
        let policy = &server.options.access;
        let view = policy.view(&self.caller);
        let callable = |i: usize| {
            let entry = &catalogue.tools[i];
            let item = Item::tool(entry.plugin.name(), &entry.tool);
            entry.for_model
                && !search::is_reserved(&entry.name)
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
        out: Outbox,
    ) -> BoxFuture<Result<String, CallError>> {
        // Cancelled with the calling plugin's call, or when that call stops
        // waiting (its deadline passed).
        let cancel = cancelled.child_token();
        let cancel_when_dropped = cancel.clone().drop_guard();
        let span = tracing::debug_span!(
            "mcp.tool_call_from_plugin",
            otel.name = "tools/call",
            mcp.plugin = %self.plugin(),
        );
        let runtime = self.runtime.clone();
        let running = runtime.spawn(self.run(call, out, cancel).instrument(span));
        Box::pin(async move {
            let _cancel_when_dropped = cancel_when_dropped;
            running.await.unwrap_or_else(|_| {
                Err(CallError {
                    code: ErrorCode::InternalError.code() as i32,
                    message: "the tool call failed inside the host".into(),
                })
            })
        })
    }

    fn refused(&self, name: &str, message: &str) {
        self.refused(name, &refusal(message.to_owned(), "bound"));
    }
}
