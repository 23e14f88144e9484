//! Tools: plain Rust functions over a `serde` + `schemars` argument type.

use crate::bindings::exports::wasm_mcp::plugin::tools as wit;
use crate::bindings::wasm_mcp::plugin::types::Error;
use crate::content::{text, Content};
use crate::schema::{input_schema_of, schema_of};
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

pub use wit::{TaskSupport, ToolAnnotations};

/// The result of a tool call.
pub type CallResult = wit::CallResult;

/// A tool result that carries structured content (and so an output schema)
/// as well as its JSON text for clients that only read `content`.
pub struct Structured<T>(pub T);

/// What a tool function may return.
///
/// Implemented for text (`String`, `&str`), [`Content`], `Vec<Content>`,
/// [`CallResult`], [`Structured`] and `Result<T, E>` where `T` is one of
/// these and `E: Display`: an `Err` becomes a tool error (`isError: true`)
/// that the model can read.
pub trait IntoCallResult {
    /// Converts the value into the result the client receives.
    fn into_call_result(self) -> CallResult;
    /// The output schema of the tool, for results with structured content.
    fn output_schema() -> Option<Value> {
        None
    }
}

fn content_result(content: Vec<Content>) -> CallResult {
    CallResult {
        content,
        structured_content: None,
        is_error: false,
        meta: None,
    }
}

impl IntoCallResult for String {
    fn into_call_result(self) -> CallResult {
        content_result(vec![text(self)])
    }
}

impl IntoCallResult for &str {
    fn into_call_result(self) -> CallResult {
        content_result(vec![text(self)])
    }
}

impl IntoCallResult for Content {
    fn into_call_result(self) -> CallResult {
        content_result(vec![self])
    }
}

impl IntoCallResult for Vec<Content> {
    fn into_call_result(self) -> CallResult {
        content_result(self)
    }
}

impl IntoCallResult for CallResult {
    fn into_call_result(self) -> CallResult {
        self
    }
}

impl<T: Serialize + JsonSchema> IntoCallResult for Structured<T> {
    fn into_call_result(self) -> CallResult {
        match serde_json::to_string(&self.0) {
            Ok(json) => CallResult {
                content: vec![text(json.clone())],
                structured_content: Some(json),
                is_error: false,
                meta: None,
            },
            Err(e) => error_result(format!("could not serialize the result: {e}")),
        }
    }
    fn output_schema() -> Option<Value> {
        Some(schema_of::<T>())
    }
}

impl<T: IntoCallResult, E: std::fmt::Display> IntoCallResult for Result<T, E> {
    fn into_call_result(self) -> CallResult {
        match self {
            Ok(ok) => ok.into_call_result(),
            Err(e) => error_result(e.to_string()),
        }
    }
    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

/// A tool error (`isError: true`) with `message` as its text, for the
/// model to read.
pub fn error_result(message: impl Into<String>) -> CallResult {
    CallResult {
        content: vec![text(message)],
        structured_content: None,
        is_error: true,
        meta: None,
    }
}

type Handler = Box<dyn Fn(&str) -> Result<CallResult, Error>>;

/// Parses tool arguments into `A`. A tool without arguments (`A = ()`)
/// receives an object from clients, which serde reads as unit only as
/// `null`; any object will do for it, as before.
pub(crate) fn arguments_as<A: DeserializeOwned>(value: Value) -> Result<A, Error> {
    let object = value.is_object();
    serde_json::from_value::<A>(value).or_else(|e| {
        object
            .then(|| serde_json::from_value::<A>(Value::Null).ok())
            .flatten()
            .ok_or_else(|| Error::InvalidParams(format!("invalid arguments: {e}")))
    })
}

/// A tool: its description and the function that runs it.
///
/// Schemas are derived only when the tool is listed: a plugin is built
/// afresh for every call, and a call needs no schema.
pub struct Tool {
    pub(crate) meta: wit::Tool,
    pub(crate) handler: Handler,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    derive_input_schema: fn() -> Value,
    derive_output_schema: fn() -> Option<Value>,
}

impl Tool {
    /// A tool named `name` that runs `f` on arguments parsed from JSON into `A`.
    /// The input schema is derived from `A`; use `()` for a tool without arguments.
    pub fn new<A, R, F>(name: impl Into<String>, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: IntoCallResult,
        F: Fn(A) -> R + 'static,
    {
        let handler: Handler = Box::new(move |arguments: &str| {
            let value: Value = serde_json::from_str(arguments)
                .map_err(|e| Error::InvalidParams(format!("arguments are not JSON: {e}")))?;
            Ok(f(arguments_as::<A>(value)?).into_call_result())
        });
        Tool {
            meta: wit::Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: String::new(),
                output_schema: None,
                annotations: None,
                task_support: TaskSupport::Forbidden,
                icons: Vec::new(),
                meta: None,
            },
            handler,
            input_schema: None,
            output_schema: None,
            derive_input_schema: input_schema_of::<A>,
            derive_output_schema: R::output_schema,
        }
    }

    /// The tool's description with its schemas, as listed to the host.
    pub(crate) fn describe(&self) -> wit::Tool {
        let input = self
            .input_schema
            .clone()
            .unwrap_or_else(self.derive_input_schema);
        wit::Tool {
            input_schema: input.to_string(),
            output_schema: self
                .output_schema
                .clone()
                .or_else(self.derive_output_schema)
                .map(|s| s.to_string()),
            ..self.meta.clone()
        }
    }

    /// Sets what the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.meta.description = Some(description.into());
        self
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.meta.title = Some(title.into());
        self
    }

    /// Sets whether the tool may run as a task.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.meta.task_support = support;
        self
    }

    fn hints(&mut self) -> &mut wit::ToolAnnotations {
        self.meta.annotations.get_or_insert(wit::ToolAnnotations {
            title: None,
            read_only_hint: None,
            destructive_hint: None,
            idempotent_hint: None,
            open_world_hint: None,
        })
    }

    /// Sets the tool's annotations outright (a hint left `None` is not sent).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.meta.annotations = Some(annotations);
        self
    }

    /// Marks the tool as not modifying its environment.
    pub fn read_only(mut self) -> Self {
        self.hints().read_only_hint = Some(true);
        self
    }

    /// Marks the tool as possibly destructive.
    pub fn destructive(mut self) -> Self {
        self.hints().destructive_hint = Some(true);
        self
    }

    /// Marks the tool as not destructive: it only adds to its environment.
    pub fn non_destructive(mut self) -> Self {
        self.hints().destructive_hint = Some(false);
        self
    }

    /// Marks repeated calls with the same arguments as having no further effect.
    pub fn idempotent(mut self) -> Self {
        self.hints().idempotent_hint = Some(true);
        self
    }

    /// Marks the tool as reaching an open world of external entities.
    pub fn open_world(mut self) -> Self {
        self.hints().open_world_hint = Some(true);
        self
    }

    /// Marks the tool as reaching only a closed world (its own data).
    pub fn closed_world(mut self) -> Self {
        self.hints().open_world_hint = Some(false);
        self
    }

    /// Replaces the input schema (JSON) derived from the argument type.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the output schema (JSON), for a tool whose result type does not
    /// derive one (for example a handler returning a [`CallResult`]).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Replaces the input schema with what `schema` returns, called only
    /// when the tool is listed (a plugin is built afresh for every call, so
    /// a schema that is costly to build need not be built for calls).
    pub fn input_schema_with(mut self, schema: fn() -> Value) -> Self {
        self.input_schema = None;
        self.derive_input_schema = schema;
        self
    }

    /// Replaces the output schema with what `schema` returns, called only
    /// when the tool is listed.
    pub fn output_schema_with(mut self, schema: fn() -> Option<Value>) -> Self {
        self.output_schema = None;
        self.derive_output_schema = schema;
        self
    }

    /// Sets `_meta` on the tool's description (a view set by
    /// [`Tool::view`] or [`Tool::view_only`] is kept).
    pub fn meta(self, meta: Value) -> Self {
        let ui = self.meta_object().remove("ui");
        let mut meta = match meta {
            Value::Object(map) => map,
            other => return self.set_meta(other),
        };
        if let Some(ui) = ui {
            meta.entry("ui").or_insert(ui);
        }
        self.set_meta(Value::Object(meta))
    }

    /// Names the tool's interactive view (MCP Apps): `uri` is a `ui://`
    /// resource this plugin serves, such as one added by
    /// [`Plugin::view`](crate::Plugin::view). A client that renders views
    /// shows it with the tool's result.
    pub fn view(self, uri: impl Into<String>) -> Self {
        self.set_ui("resourceUri", Value::String(uri.into()))
    }

    /// Makes the tool one for views only (MCP Apps `visibility: ["app"]`):
    /// the host does not list it to the model, and a view calls it.
    pub fn view_only(self) -> Self {
        self.set_ui("visibility", serde_json::json!(["app"]))
    }

    /// The tool's `_meta`, as an object (empty when unset or not one).
    fn meta_object(&self) -> serde_json::Map<String, Value> {
        match self.meta.meta.as_deref().map(serde_json::from_str) {
            Some(Ok(Value::Object(map))) => map,
            _ => serde_json::Map::new(),
        }
    }

    fn set_meta(mut self, meta: Value) -> Self {
        self.meta.meta = Some(meta.to_string());
        self
    }

    /// Sets `_meta.ui.<key>`, keeping the rest of `_meta`.
    fn set_ui(self, key: &str, value: Value) -> Self {
        let mut meta = self.meta_object();
        let ui = meta
            .entry("ui")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !ui.is_object() {
            *ui = Value::Object(serde_json::Map::new());
        }
        if let Value::Object(ui) = ui {
            ui.insert(key.into(), value);
        }
        self.set_meta(Value::Object(meta))
    }
}
