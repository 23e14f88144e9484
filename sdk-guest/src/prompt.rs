//! Prompts: message templates whose arguments come from a Rust type.

use crate::bindings::exports::wasm_mcp::plugin::prompts as wit;
use crate::bindings::wasm_mcp::plugin::types::{Error, Role};
use crate::content::{text, Content};
use crate::schema::schema_of;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// One message of a rendered prompt.
pub type PromptMessage = wit::PromptMessage;

/// A message from the user.
pub fn user(content: impl Into<PromptContent>) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content: content.into().0,
    }
}

/// A message from the assistant.
pub fn assistant(content: impl Into<PromptContent>) -> PromptMessage {
    PromptMessage {
        role: Role::Assistant,
        content: content.into().0,
    }
}

/// Content of a prompt message: text or any [`Content`].
pub struct PromptContent(Content);

impl From<&str> for PromptContent {
    fn from(s: &str) -> Self {
        PromptContent(text(s))
    }
}

impl From<String> for PromptContent {
    fn from(s: String) -> Self {
        PromptContent(text(s))
    }
}

impl From<Content> for PromptContent {
    fn from(c: Content) -> Self {
        PromptContent(c)
    }
}

/// What a prompt function may return: text (one user message), messages,
/// or a `Result` of either.
pub trait IntoMessages {
    /// Converts the value into the prompt's messages.
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error>;
}

impl IntoMessages for String {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        Ok(vec![user(self)])
    }
}

impl IntoMessages for &str {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        Ok(vec![user(self)])
    }
}

impl IntoMessages for Vec<PromptMessage> {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        Ok(self)
    }
}

impl<T: IntoMessages, E: std::fmt::Display> IntoMessages for Result<T, E> {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        self.map_err(|e| Error::Internal(e.to_string()))?
            .into_messages()
    }
}

type Render = Box<dyn Fn(Map<String, Value>) -> Result<Vec<PromptMessage>, Error>>;

/// A prompt: its description and the function that renders it. Its
/// arguments are derived only when it is listed (see [`crate::Tool`]).
pub struct Prompt {
    pub(crate) meta: wit::Prompt,
    pub(crate) render: Render,
    derive_arguments: fn() -> Vec<wit::PromptArgument>,
}

impl Prompt {
    /// A prompt named `name`, rendered by `f`. Its arguments are the fields of
    /// `A`, documented by their doc comments; use `()` for a prompt without
    /// arguments. MCP sends prompt arguments as strings: a field of another
    /// type (a number, a bool, `Option<u32>`, ...) is parsed from its string
    /// as JSON, and an `Option` field may be left out.
    pub fn new<A, R, F>(name: impl Into<String>, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: IntoMessages,
        F: Fn(A) -> R + 'static,
    {
        let render: Render = Box::new(move |args| {
            let args = typed_arguments(&schema_of::<A>(), args);
            f(crate::tool::arguments_as::<A>(Value::Object(args))?).into_messages()
        });
        Prompt {
            meta: wit::Prompt {
                name: name.into(),
                title: None,
                description: None,
                arguments: Vec::new(),
                icons: Vec::new(),
                meta: None,
            },
            render,
            derive_arguments: || arguments_of(&schema_of::<A>()),
        }
    }

    /// The prompt's description with its arguments, as listed to the host.
    pub(crate) fn describe(&self) -> wit::Prompt {
        wit::Prompt {
            arguments: (self.derive_arguments)(),
            ..self.meta.clone()
        }
    }

    /// Sets what the prompt does.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.meta.description = Some(description.into());
        self
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.meta.title = Some(title.into());
        self
    }
}

/// The string arguments MCP sends, as the types the schema asks for: a
/// string stays a string where a string is accepted, else it is read as
/// JSON when it parses (`"3"` → `3`, `"true"` → `true`).
fn typed_arguments(schema: &Value, args: Map<String, Value>) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    args.into_iter()
        .map(|(name, value)| {
            let takes_string = properties
                .and_then(|p| p.get(&name))
                .is_none_or(accepts_string);
            let value = match value {
                Value::String(text) if !takes_string => {
                    serde_json::from_str(&text).unwrap_or(Value::String(text))
                }
                other => other,
            };
            (name, value)
        })
        .collect()
}

/// Whether a property's schema accepts a string (or says nothing of type).
fn accepts_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        _ => ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| schema.get(k).and_then(Value::as_array))
            .flatten()
            .all(accepts_string),
    }
}

fn arguments_of(schema: &Value) -> Vec<wit::PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| wit::PromptArgument {
            name: name.clone(),
            title: property
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            required: required.contains(&name.as_str()),
        })
        .collect()
}
