//! The values the host sends, as types: MCP's JSON shapes (camelCase
//! names, absent rather than `null` when unset), serialized by serde
//! instead of built by hand. What a plugin wrote as JSON (a `_meta`
//! object, structured content, a schema) passes through as a [`Value`].

use serde::Serialize;
use serde_json::{Map, Value};

mod envelope;
mod lifecycle;
mod skills;
mod subscriptions;
mod tasks;

pub use envelope::{CacheScope, Caching, Envelope, Enveloped, ServerInfoMeta};
pub use lifecycle::{
    DiscoverResult, Empty, Extensions, InitializeResult, ListCapability, ResourcesCapability,
    ServerCapabilities, ServerInfo, SkillsExtension, TaskRequests, TasksCapability,
    ToolTaskRequests, UiExtension,
};
pub use skills::{
    DirectoryChild, GetSkillResult, ListSkillsResult, ReadDirectoryResult, SkillFileInfo, SkillInfo,
};
pub use subscriptions::{
    Honored, ResourceUpdated, SubscriptionAcknowledged, SubscriptionTag, Tagged, TaggedLogMessage,
};
pub use tasks::{
    Acknowledged, CreateTaskResult, DetailedTask, ListTasksResult, StoredOutcome, Task, TaskDetail,
    TaskStatus, TaskView, Timing,
};

/// Who a message or an annotation is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// Hints about a content block or resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who it is for; left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Role>,
    /// How important it is, from 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed (ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// An icon of a tool, resource or prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// Where it is (a URI).
    pub src: String,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it comes in; left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The theme it is for (`light`, `dark`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

/// The contents of a resource: text, or bytes as base64.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its body.
    #[serde(flatten)]
    pub body: Body,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A resource's body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// UTF-8 text.
    Text(String),
    /// Bytes, base64-encoded.
    Blob(String),
}

/// A content block of a tool result or a prompt message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Content {
    /// What kind of block, and what it holds.
    #[serde(flatten)]
    pub kind: ContentKind,
    /// Hints about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The kinds of content block, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentKind {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The bytes, base64.
        data: String,
        /// Its media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The bytes, base64.
        data: String,
        /// Its media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink(ResourceLink),
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: ResourceContents,
    },
}

/// A link to a resource, in a content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A tool's behaviour hints.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// It does not change its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// It may destroy something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice does no more than once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches an open world (the web, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// How a tool may run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// Whether it runs as a task: `optional` or `required`.
    pub task_support: &'static str,
}

/// A tool as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name clients call it by.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its structured result, where the revision lists it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Its behaviour hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// How it may run (absent: never as a task).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    /// Its icons; left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A `CallToolResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What it says, block by block.
    pub content: Vec<Content>,
    /// The plugin's structured result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Present (`true`) when the tool failed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A resource as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Its icons; left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A resource template as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// Its RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of what it names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Its icons; left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    pub required: bool,
}

/// A prompt as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// The name clients get it by.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments (always present, maybe empty).
    pub arguments: Vec<PromptArgument>,
    /// Its icons; left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

/// A `GetPromptResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
    /// The plugin's own `_meta` object.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A `CompleteResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompleteResult {
    /// The completion.
    pub completion: Completion,
}

/// The values offered for an argument.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The values, at most a hundred.
    pub values: Vec<String>,
    /// How many there are in all, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    /// Whether there are more than those sent.
    pub has_more: bool,
}

/// `value` as JSON (the types above always serialize).
pub fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("the wire model always serializes")
}
