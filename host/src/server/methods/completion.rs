//! `completion/complete`.

use super::{clip, invalid, unless_late, Request};
use super::{from_call, Answer, Answered};
use crate::protocol::params::{self, Params};
use crate::protocol::ErrorCode;
use crate::registry::Catalogue;
use crate::runtime::completions;
use crate::server::access::Item;
use crate::server::call;
use crate::server::call::outcome::{failed_request, plugin_error};
use crate::server::convert;
use serde_json::{json, Value};

/// `completion/complete`: suggestions for a prompt's or a resource
/// template's argument, from the plugin that serves it.
pub(super) async fn complete(request: &Request<'_>, catalogue: &Catalogue) -> Answered {
    let params = Params(request.params);
    let reference = params.object("ref")?;
    let argument = params.object("argument")?;
    let argument_name = argument.str("name")?.to_owned();
    let argument_value = argument.str("value")?.to_owned();
    let context_arguments: Vec<(String, String)> = params
        .get("context")
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object)
        .map(|args| {
            args.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let (plugin, reference) = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference.str("name")?;
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
            (
                &entry.plugin,
                completions::Reference::Prompt(entry.prompt.name.clone()),
            )
        }
        Some("ref/resource") => {
            let uri = reference.str("uri")?;
            let entry = catalogue.template(uri).ok_or_else(|| {
                invalid(unless_late(
                    request,
                    format!("Unknown resource template: {}", clip(uri)),
                ))
            })?;
            request.may_use(
                &Item::resource(entry.plugin.name(), uri),
                &format!("resource template {}", clip(uri)),
            )?;
            (
                &entry.plugin,
                completions::Reference::ResourceTemplate(uri.to_owned()),
            )
        }
        _ => {
            return Err(params::invalid(
                "\"ref.type\" must be \"ref/prompt\" or \"ref/resource\"",
            ))
        }
    };
    if !plugin.exports().completions {
        return Ok(Answer::Result(
            json!({ "completion": { "values": [], "hasMore": false } }),
        ));
    }
    let asked = completions::CompletionRequest {
        reference,
        argument_name,
        argument_value,
        context_arguments,
    };
    let context = call::inline_scope(&request.call_request(), plugin.name());
    match plugin.complete(context, &asked).await {
        Ok(Ok(completion)) => Ok(Answer::Result(convert::completion(&completion))),
        Ok(Err(error)) => Err(plugin_error(error, ErrorCode::InvalidParams)),
        Err(error) => from_call(failed_request(plugin, error)),
    }
}
