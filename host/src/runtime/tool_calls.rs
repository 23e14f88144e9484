//! The `tool-calls` interface (code mode), defined on the linker by hand
//! like `host`: a plugin granted `call_tools` searches and calls tools
//! through its call's context, which decides each call as the caller's own
//! `tools/call` would be decided. Here, before anything is copied out of
//! the guest: the grant, and the call's bounds (tools called, bytes
//! moved).

use super::context::ToolCall;
use super::lift::GuestStr;
use super::state::CallState;
use super::tool_call_types::{CallError, ToolInfo};
use super::ToolCallGrant;
use wasmtime::component::Linker;
use wasmtime::StoreContextMut;

type Store<'a> = StoreContextMut<'a, CallState>;

/// The code of a call this interface refuses itself (not granted, over a
/// bound): JSON-RPC's "invalid request".
pub(super) const REFUSED: i32 = -32600;

/// The longest tool name or search query read, in bytes.
const MAX_NAME_BYTES: usize = 1024;

/// The most tools one search returns.
const MAX_FOUND: usize = 100;

/// One call's use of the interface so far.
#[derive(Debug, Default)]
pub(super) struct ToolCallUse {
    /// Tools called.
    made: u32,
    /// Bytes of arguments and results moved.
    moved: usize,
}

/// Defines `wasm-mcp:plugin/tool-calls@0.1.0` in `linker`.
pub(super) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    let mut calls = linker.instance("wasm-mcp:plugin/tool-calls@0.1.0")?;
    calls.func_wrap(
        "search-tools",
        |mut store: Store<'_>, (query, limit): (GuestStr, u32)| {
            let Some(grant) = store.data().grants.tool_calls.clone() else {
                return Ok((Vec::<ToolInfo>::new(),));
            };
            // A search counts as a call: past the bound it finds nothing.
            let made = store.data().tool_call_use.made;
            if query.len() > MAX_NAME_BYTES || made >= store.data().grants.limits.tool_calls {
                return Ok((Vec::new(),));
            }
            let query = query.to_str(&store)?.into_owned();
            let limit = (limit as usize).min(MAX_FOUND);
            let state = store.data_mut();
            state.tool_call_use.made += 1;
            let mut found = state.context.search_tools(&grant, &query, limit);
            // What a search returns counts against the bytes the call's
            // tool calls may move: the last tools that do not fit are left
            // out.
            let room = state.room();
            let mut moved = 0;
            let fits = found
                .iter()
                .take_while(|tool| {
                    moved += size(tool);
                    moved <= room
                })
                .count();
            found.truncate(fits);
            state.tool_call_use.moved += found.iter().map(size).sum::<usize>();
            Ok((found,))
        },
    )?;
    calls.func_wrap_async(
        "call-tool",
        |mut store: Store<'_>, (name, arguments): (GuestStr, GuestStr)| {
            Box::new(async move {
                let state = store.data();
                let grant = match checked(state, &name, &arguments) {
                    Ok(grant) => grant,
                    Err(message) => {
                        // The name is read for the record when it is short.
                        let named = match name.len() <= MAX_NAME_BYTES {
                            true => name.to_str(&store)?.into_owned(),
                            false => String::new(),
                        };
                        store.data().context.tool_call_refused(&named, &message);
                        return Ok((Err(refused(message)),));
                    }
                };
                let name = name.to_str(&store)?.into_owned();
                let arguments = arguments.to_str(&store)?.into_owned();
                let state = store.data_mut();
                state.tool_call_use.made += 1;
                state.tool_call_use.moved += name.len() + arguments.len();
                let named = name.clone();
                let call = ToolCall {
                    name,
                    arguments,
                    grant,
                    depth: state.grants.limits.tool_call_depth,
                };
                let context = state.context.clone();
                // The tool's own plugin runs the call: this plugin's slot
                // is free meanwhile (two plugins calling each other from
                // different requests never wait on each other's slots).
                // Its deadline runs on.
                state.turn.release();
                let result = context.call_tool(call).await;
                let state = store.data_mut();
                state.turn.take_again().await;
                let result = match result {
                    Ok(text) if text.len() > state.room() => {
                        let message = format!(
                            "the tool ran, but its result ({} bytes) is over what this call's tool calls may still move ({} bytes of tool_call_mb)",
                            text.len(),
                            state.room()
                        );
                        state.context.tool_call_refused(&named, &message);
                        Err(refused(message))
                    }
                    Ok(text) => {
                        state.tool_call_use.moved += text.len();
                        Ok(text)
                    }
                    Err(error) => Err(error),
                };
                Ok((result,))
            })
        },
    )?;
    Ok(())
}

/// The grant under which the plugin of `state` may call tool `name` with
/// `arguments`, or why it may not (before either is read).
fn checked(
    state: &CallState,
    name: &GuestStr,
    arguments: &GuestStr,
) -> Result<ToolCallGrant, String> {
    let Some(grant) = state.grants.tool_calls.clone() else {
        let plugin = &state.plugin;
        return Err(format!(
            "plugin {plugin} may not call tools: the operator has not granted it ([plugins.{plugin}] call_tools = [\"PLUGIN.TOOL\", ...])"
        ));
    };
    let limits = &state.grants.limits;
    if state.tool_call_use.made >= limits.tool_calls {
        return Err(format!(
            "this call has called {} tools, its limit (tool_calls)",
            limits.tool_calls
        ));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "a tool name of {} bytes: the longest is {MAX_NAME_BYTES}",
            name.len()
        ));
    }
    let size = name.len() + arguments.len();
    if size > state.room() {
        return Err(format!(
            "arguments of {size} bytes are over what this call's tool calls may still move ({} bytes of tool_call_mb)",
            state.room()
        ));
    }
    Ok(grant)
}

fn refused(message: String) -> CallError {
    CallError {
        code: REFUSED,
        message,
    }
}

/// What `tool` moves into the guest, in bytes.
fn size(tool: &ToolInfo) -> usize {
    tool.name.len()
        + tool.plugin.len()
        + tool.description.as_ref().map_or(0, String::len)
        + tool.input_schema.len()
        + tool.output_schema.as_ref().map_or(0, String::len)
}

impl CallState {
    /// Bytes this call's tool calls may still move.
    fn room(&self) -> usize {
        self.grants
            .limits
            .tool_call_bytes
            .saturating_sub(self.tool_call_use.moved)
    }
}
