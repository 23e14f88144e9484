//! The glue that `export_plugin!` expands to. Not a public API.

use crate::bindings::exports::wasm_mcp::plugin::{completions, prompts, resources, tools};
use crate::bindings::wasm_mcp::plugin::types::{Error, ResourceContents};
use crate::plugin::Plugin;
use crate::resource::{unmatched, UriVars};
use serde_json::{Map, Value};

pub fn list_tools(plugin: &Plugin) -> Vec<tools::Tool> {
    plugin.tools.iter().map(|t| t.describe()).collect()
}

pub fn call_tool(plugin: &Plugin, name: &str, arguments: &str) -> Result<tools::CallResult, Error> {
    let tool = plugin
        .tools
        .iter()
        .find(|t| t.meta.name == name)
        .ok_or_else(|| Error::NotFound(format!("no tool named {name}")))?;
    (tool.handler)(arguments)
}

pub fn list_resources(plugin: &Plugin) -> Vec<resources::Resource> {
    plugin.resources.iter().map(|r| r.meta.clone()).collect()
}

pub fn list_resource_templates(plugin: &Plugin) -> Vec<resources::ResourceTemplate> {
    plugin.templates.iter().map(|t| t.meta.clone()).collect()
}

pub fn read_resource(plugin: &Plugin, uri: &str) -> Result<Vec<ResourceContents>, Error> {
    if let Some(resource) = plugin.resources.iter().find(|r| r.meta.uri == uri) {
        return (resource.read)(uri, &UriVars::default());
    }
    for template in &plugin.templates {
        if let Some(vars) = UriVars::of(&template.pattern, uri) {
            return (template.read)(uri, &vars);
        }
    }
    Err(unmatched(uri))
}

pub fn list_prompts(plugin: &Plugin) -> Vec<prompts::Prompt> {
    plugin.prompts.iter().map(|p| p.describe()).collect()
}

pub fn get_prompt(
    plugin: &Plugin,
    name: &str,
    arguments: Vec<(String, String)>,
) -> Result<prompts::PromptResult, Error> {
    let prompt = plugin
        .prompts
        .iter()
        .find(|p| p.meta.name == name)
        .ok_or_else(|| Error::NotFound(format!("no prompt named {name}")))?;
    let args: Map<String, Value> = arguments
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Ok(prompts::PromptResult {
        description: prompt.meta.description.clone(),
        messages: (prompt.render)(args)?,
        meta: None,
    })
}

pub fn complete(
    plugin: &Plugin,
    request: completions::CompletionRequest,
) -> Result<completions::Completion, Error> {
    let found = plugin
        .completers
        .iter()
        .find(|(reference, argument, _)| {
            *argument == request.argument_name && same_reference(reference, &request.reference)
        })
        .map(|(_, _, f)| f(&request.argument_value, &request.context_arguments));
    let values = found.unwrap_or_default();
    let total = values.len() as u32;
    Ok(completions::Completion {
        values,
        total: Some(total),
        has_more: false,
    })
}

fn same_reference(a: &completions::Reference, b: &completions::Reference) -> bool {
    use completions::Reference::*;
    match (a, b) {
        (Prompt(x), Prompt(y)) | (ResourceTemplate(x), ResourceTemplate(y)) => x == y,
        _ => false,
    }
}
