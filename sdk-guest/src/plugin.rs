//! The [`Plugin`] builder: everything one plugin offers.

use crate::bindings::exports::wasm_mcp::plugin::completions::Reference;
use crate::prompt::{IntoMessages, Prompt};
use crate::resource::{IntoContents, Resource, Template, UriVars};
use crate::tool::{IntoCallResult, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub(crate) type Completer = Box<dyn Fn(&str, &[(String, String)]) -> Vec<String>>;

/// Everything one plugin offers. Build it in a function and hand that
/// function to [`export_plugin!`](crate::export_plugin).
#[derive(Default)]
pub struct Plugin {
    pub(crate) tools: Vec<Tool>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<Template>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) completers: Vec<(Reference, String, Completer)>,
}

impl Plugin {
    /// An empty plugin.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool `name` that runs `f`; its input schema comes from `A`.
    pub fn tool<A, R, F>(self, name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: IntoCallResult,
        F: Fn(A) -> R + 'static,
    {
        self.add_tool(Tool::new(name, f).description(description))
    }

    /// Adds a tool built with [`Tool::new`] and its setters.
    pub fn add_tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a text resource at `uri` whose contents `f` returns.
    pub fn resource<R, E, F>(self, uri: &str, name: &str, mime_type: &str, f: F) -> Self
    where
        R: IntoContents + 'static,
        E: std::fmt::Display + 'static,
        F: Fn(&str) -> Result<R, E> + 'static,
    {
        self.add_resource(Resource::new(uri, name, f).mime_type(mime_type))
    }

    /// Adds an interactive view (MCP Apps) at `uri`, a `ui://` URI: the
    /// HTML page `html` ([`Resource::view`]). A tool shows it with
    /// [`Tool::view`](crate::Tool::view).
    pub fn view(self, uri: &str, name: &str, html: &str) -> Self {
        self.add_resource(Resource::view(uri, name, html))
    }

    /// Adds a resource built with [`Resource::new`] and its setters.
    pub fn add_resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a resource template; `f` reads a matching URI given its variables.
    pub fn template<R, E, F>(self, uri_template: &str, name: &str, mime_type: &str, f: F) -> Self
    where
        R: IntoContents + 'static,
        E: std::fmt::Display + 'static,
        F: Fn(&str, &UriVars) -> Result<R, E> + 'static,
    {
        self.add_template(Template::new(uri_template, name, f).mime_type(mime_type))
    }

    /// Adds a template built with [`Template::new`] and its setters.
    pub fn add_template(mut self, template: Template) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a prompt `name` rendered by `f`; its arguments are the fields of `A`.
    pub fn prompt<A, R, F>(mut self, name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: IntoMessages,
        F: Fn(A) -> R + 'static,
    {
        self.prompts
            .push(Prompt::new(name, f).description(description));
        self
    }

    /// Adds completions for argument `argument` of prompt `prompt`: `f` gets
    /// what the user typed and the other arguments, and returns suggestions.
    pub fn complete_prompt<F>(mut self, prompt: &str, argument: &str, f: F) -> Self
    where
        F: Fn(&str, &[(String, String)]) -> Vec<String> + 'static,
    {
        self.completers.push((
            Reference::Prompt(prompt.into()),
            argument.into(),
            Box::new(f),
        ));
        self
    }

    /// Adds completions for variable `variable` of the template `uri_template`.
    pub fn complete_template<F>(mut self, uri_template: &str, variable: &str, f: F) -> Self
    where
        F: Fn(&str, &[(String, String)]) -> Vec<String> + 'static,
    {
        let reference = Reference::ResourceTemplate(uri_template.into());
        self.completers
            .push((reference, variable.into(), Box::new(f)));
        self
    }
}
