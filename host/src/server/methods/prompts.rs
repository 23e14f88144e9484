//! `prompts/list` and `prompts/get`.

use super::{clip, invalid, unless_late, Request};
use super::{from_call, Answered};
use crate::protocol::params::{self, Params};
use crate::protocol::{ErrorCode, Method, RpcError};
use crate::registry::Catalogue;
use crate::server::access::Item;
use crate::server::call::outcome::{failed_request, plugin_error, within_result_limit};
use crate::server::call::Done;
use crate::server::call::{self, Ended, RequestScope, Run, Target};
use crate::server::convert;
use serde_json::Value;
use std::sync::Arc;

/// `prompts/get`: checks the arguments are strings and the required ones
/// are there, then runs the call.
pub(super) async fn get(request: &Request<'_>, catalogue: &Catalogue) -> Answered {
    let params = request.params;
    let name = Params(params).str("name")?;
    let entry = catalogue.prompt(name).ok_or_else(|| {
        invalid(unless_late(
            request,
            format!("Unknown prompt: {}", clip(name)),
        ))
    })?;
    request.may_use(
        &Item::prompt(entry.plugin.name(), &entry.prompt.name),
        &format!("prompt {}", clip(name)),
    )?;
    let mut arguments = Vec::new();
    match params.get("arguments") {
        None | Some(Value::Null) => {}
        Some(Value::Object(args)) => {
            for (key, value) in args {
                let value = value.as_str().ok_or_else(|| {
                    params::invalid(format!("prompt argument \"{key}\" must be a string"))
                })?;
                arguments.push((key.clone(), value.to_owned()));
            }
        }
        Some(_) => return Err(params::invalid("\"arguments\" must be an object")),
    }
    let missing: Vec<&str> = entry
        .prompt
        .arguments
        .iter()
        .filter(|a| a.required && !arguments.iter().any(|(k, _)| *k == a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "Missing required argument(s) for prompt {name}: {}",
            missing.join(", ")
        )));
    }
    let plugin = entry.plugin.clone();
    let prompt = entry.prompt.name.clone();
    let given = params.get("arguments").cloned().unwrap_or(Value::Null);
    let target = Target {
        method: Method::GetPrompt,
        name,
        arguments: &given,
    };
    let call = move |context: Arc<RequestScope>| async move {
        let outcome = match plugin.get_prompt(context, &prompt, &arguments).await {
            Ok(Ok(result)) => within_result_limit(&plugin, convert::prompt_result(&result))
                .map(Done::Result)
                .map_err(RpcError::internal),
            Ok(Err(error)) => Err(plugin_error(error, ErrorCode::InvalidParams)),
            Err(error) => failed_request(&plugin, error),
        };
        Ended::from(outcome)
    };
    let asked = request.call_request();
    from_call(
        call::run(asked, entry.plugin.name(), target, Run::Inline, call)
            .await?
            .into_outcome(),
    )
}
