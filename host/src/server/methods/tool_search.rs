//! `tools/call` of the host's own search tools ([`crate::server::search`]):
//! `search_tools` ranks the tools the caller may see; `call_tool` calls
//! one of them as a `tools/call` of its own would.

use super::{invalid, Request};
use super::{Answer, Answered};
use crate::registry::Catalogue;
use crate::server::access::Item;
use crate::server::convert;
use crate::server::prepared::List;
use crate::server::search::{self, CALL, SEARCH};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Serves a call of search tool `name` with `arguments`.
pub(super) async fn call(
    request: &Request<'_>,
    catalogue: &Arc<Catalogue>,
    name: &str,
    arguments: &Value,
) -> Answered {
    let answer = match name {
        SEARCH => search_tools(request, catalogue, arguments),
        CALL => return call_tool(request, catalogue, arguments).await,
        _ => unreachable!("only the search tools come here"),
    };
    match answer {
        Ok(result) => Ok(Answer::Result(result)),
        // Bad arguments are a tool's error from 2025-11-25 on.
        Err(message) if request.era.argument_errors_are_tool_errors() => {
            Ok(Answer::Result(convert::tool_error(&message)))
        }
        Err(message) => Err(invalid(message)),
    }
}

/// The tools the caller may see that best fit the query, with their
/// descriptions and input schemas.
fn search_tools(
    request: &Request<'_>,
    catalogue: &Arc<Catalogue>,
    arguments: &Value,
) -> Result<Value, String> {
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .ok_or("search_tools needs \"query\": a string saying what the tool should do")?;
    let limit = search::limit_of(arguments.get("limit"))?;
    let server = &request.conn.server;
    let lists = server
        .prepared
        .of(catalogue, List::Tools(true), &server.options);
    let policy = &server.options.access;
    let view = policy.view(request.caller);
    let visible = |i: usize| {
        let tool = &catalogue.tools[i];
        tool.for_model
            && !search::is_reserved(&tool.name)
            && view.as_ref().is_none_or(|view| {
                let item = Item::tool(tool.plugin.name(), &tool.tool);
                view.sees(&policy.rule(&item), &item)
            })
    };
    let found: Vec<Value> = lists
        .index(catalogue)
        .rank(query, visible, limit)
        .into_iter()
        .map(|i| {
            let entry = &catalogue.tools[i];
            let mut tool = Map::new();
            tool.insert("name".into(), json!(entry.name));
            for (key, value) in [
                ("title", &entry.tool.title),
                ("description", &entry.tool.description),
            ] {
                if let Some(value) = value {
                    tool.insert(key.into(), json!(value));
                }
            }
            tool.insert("inputSchema".into(), (*entry.input_schema).clone());
            Value::Object(tool)
        })
        .collect();
    let found = json!({ "tools": found });
    Ok(json!({
        "content": [{ "type": "text", "text": found.to_string() }],
        "structuredContent": found,
    }))
}

/// A `tools/call` of the tool `arguments.name` names, with
/// `arguments.arguments`, as if the client had sent it (the same checks of
/// the caller's token, rates and the tool's schema).
async fn call_tool(
    request: &Request<'_>,
    catalogue: &Arc<Catalogue>,
    arguments: &Value,
) -> Answered {
    let bad = |message: &str| -> Answered {
        if request.era.argument_errors_are_tool_errors() {
            Ok(Answer::Result(convert::tool_error(message)))
        } else {
            Err(invalid(message))
        }
    };
    let Some(name) = arguments.get("name").and_then(Value::as_str) else {
        return bad("call_tool needs \"name\": the name of a tool found with search_tools");
    };
    if search::is_reserved(name) {
        return bad("call_tool calls the tools search_tools finds, not the search tools");
    }
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    match arguments.get("arguments") {
        None | Some(Value::Null) => {}
        Some(object @ Value::Object(_)) => {
            params.insert("arguments".into(), object.clone());
        }
        Some(_) => return bad("call_tool's \"arguments\" must be an object"),
    }
    for key in ["_meta", "task"] {
        if let Some(value) = request.params.get(key) {
            params.insert(key.into(), value.clone());
        }
    }
    let inner = Request {
        conn: request.conn,
        id: request.id,
        params: &params,
        era: request.era,
        cancel: request.cancel.clone(),
        reply: request.reply,
        caller: request.caller,
        reached: request.reached,
    };
    Box::pin(super::tools::call(&inner, catalogue)).await
}
