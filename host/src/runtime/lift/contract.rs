//! The contract's types as lifted under the call's budget, and how each
//! becomes the host type the bindings define.
//!
//! Each mirrors a WIT type field for field, with the WIT names; the
//! component's types are checked against them when a function is looked up.

// wasmtime's `ComponentType`/`Lift` derives and impls need these types
// public (they appear in public associated types), though the module is
// private.
#![allow(unreachable_pub)]

use super::{plain, BoundedBytes, BoundedList, BoundedStr, IntoOwned};
use crate::runtime::bindings::exports::wasm_mcp::plugin::{completions, prompts, resources, tools};
use crate::runtime::bindings::wasm_mcp::plugin::{host, types};
use wasmtime::component::{ComponentType, Lift};

/// A WIT record lifted under the budget, and its move into the bindings'
/// type of the same fields.
macro_rules! record {
    ($(#[$doc:meta])* $view:ident => $owned:path { $($field:ident: $ty:ty = $wit:tt),* $(,)? }) => {
        $(#[$doc])*
        #[derive(ComponentType, Lift)]
        #[component(record)]
        pub struct $view {
            $(#[component(name = $wit)] $field: $ty,)*
        }

        impl IntoOwned for $view {
            type Owned = $owned;
            fn into_owned(self) -> $owned {
                $owned { $($field: self.$field.into_owned(),)* }
            }
        }
    };
}

plain!(
    types::Role,
    types::LogLevel,
    tools::TaskSupport,
    host::ListKind
);

record!(
    /// `annotations`
    Annotations => types::Annotations {
        audience: BoundedList<types::Role> = "audience",
        priority: Option<f64> = "priority",
        last_modified: Option<BoundedStr> = "last-modified",
    }
);

record!(
    /// `icon`
    Icon => types::Icon {
        src: BoundedStr = "src",
        mime_type: Option<BoundedStr> = "mime-type",
        sizes: BoundedList<BoundedStr> = "sizes",
        theme: Option<BoundedStr> = "theme",
    }
);

/// `resource-body`
#[derive(ComponentType, Lift)]
#[component(variant)]
pub enum ResourceBody {
    /// `text`
    #[component(name = "text")]
    Text(BoundedStr),
    /// `blob`
    #[component(name = "blob")]
    Blob(BoundedBytes),
}

impl IntoOwned for ResourceBody {
    type Owned = types::ResourceBody;
    fn into_owned(self) -> Self::Owned {
        match self {
            ResourceBody::Text(t) => types::ResourceBody::Text(t.into_owned()),
            ResourceBody::Blob(b) => types::ResourceBody::Blob(b.into_owned()),
        }
    }
}

record!(
    /// `resource-contents`
    ResourceContents => types::ResourceContents {
        uri: BoundedStr = "uri",
        mime_type: Option<BoundedStr> = "mime-type",
        body: ResourceBody = "body",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `text-content`
    TextContent => types::TextContent {
        text: BoundedStr = "text",
        annotations: Option<Annotations> = "annotations",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `media-content`
    MediaContent => types::MediaContent {
        data: BoundedBytes = "data",
        mime_type: BoundedStr = "mime-type",
        annotations: Option<Annotations> = "annotations",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `resource-link`
    ResourceLink => types::ResourceLink {
        uri: BoundedStr = "uri",
        name: BoundedStr = "name",
        title: Option<BoundedStr> = "title",
        description: Option<BoundedStr> = "description",
        mime_type: Option<BoundedStr> = "mime-type",
        size: Option<u64> = "size",
        annotations: Option<Annotations> = "annotations",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `embedded-resource`
    EmbeddedResource => types::EmbeddedResource {
        contents: ResourceContents = "contents",
        annotations: Option<Annotations> = "annotations",
        meta: Option<BoundedStr> = "meta",
    }
);

/// `content`
#[derive(ComponentType, Lift)]
#[component(variant)]
pub enum Content {
    /// `text`
    #[component(name = "text")]
    Text(TextContent),
    /// `image`
    #[component(name = "image")]
    Image(MediaContent),
    /// `audio`
    #[component(name = "audio")]
    Audio(MediaContent),
    /// `resource-link`
    #[component(name = "resource-link")]
    ResourceLink(ResourceLink),
    /// `embedded`
    #[component(name = "embedded")]
    Embedded(EmbeddedResource),
}

impl IntoOwned for Content {
    type Owned = types::Content;
    fn into_owned(self) -> Self::Owned {
        match self {
            Content::Text(c) => types::Content::Text(c.into_owned()),
            Content::Image(c) => types::Content::Image(c.into_owned()),
            Content::Audio(c) => types::Content::Audio(c.into_owned()),
            Content::ResourceLink(c) => types::Content::ResourceLink(c.into_owned()),
            Content::Embedded(c) => types::Content::Embedded(c.into_owned()),
        }
    }
}

/// `error`
#[derive(ComponentType, Lift)]
#[component(variant)]
pub(crate) enum Error {
    /// `invalid-params`
    #[component(name = "invalid-params")]
    InvalidParams(BoundedStr),
    /// `not-found`
    #[component(name = "not-found")]
    NotFound(BoundedStr),
    /// `internal`
    #[component(name = "internal")]
    Internal(BoundedStr),
}

impl IntoOwned for Error {
    type Owned = types::Error;
    fn into_owned(self) -> Self::Owned {
        match self {
            Error::InvalidParams(m) => types::Error::InvalidParams(m.into_owned()),
            Error::NotFound(m) => types::Error::NotFound(m.into_owned()),
            Error::Internal(m) => types::Error::Internal(m.into_owned()),
        }
    }
}

record!(
    /// `tool-annotations`
    ToolAnnotations => tools::ToolAnnotations {
        title: Option<BoundedStr> = "title",
        read_only_hint: Option<bool> = "read-only-hint",
        destructive_hint: Option<bool> = "destructive-hint",
        idempotent_hint: Option<bool> = "idempotent-hint",
        open_world_hint: Option<bool> = "open-world-hint",
    }
);

record!(
    /// `tool`
    Tool => tools::Tool {
        name: BoundedStr = "name",
        title: Option<BoundedStr> = "title",
        description: Option<BoundedStr> = "description",
        input_schema: BoundedStr = "input-schema",
        output_schema: Option<BoundedStr> = "output-schema",
        annotations: Option<ToolAnnotations> = "annotations",
        task_support: tools::TaskSupport = "task-support",
        icons: BoundedList<Icon> = "icons",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `call-result`
    CallResult => tools::CallResult {
        content: BoundedList<Content> = "content",
        structured_content: Option<BoundedStr> = "structured-content",
        is_error: bool = "is-error",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `resource`
    Resource => resources::Resource {
        uri: BoundedStr = "uri",
        name: BoundedStr = "name",
        title: Option<BoundedStr> = "title",
        description: Option<BoundedStr> = "description",
        mime_type: Option<BoundedStr> = "mime-type",
        size: Option<u64> = "size",
        annotations: Option<Annotations> = "annotations",
        icons: BoundedList<Icon> = "icons",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `resource-template`
    ResourceTemplate => resources::ResourceTemplate {
        uri_template: BoundedStr = "uri-template",
        name: BoundedStr = "name",
        title: Option<BoundedStr> = "title",
        description: Option<BoundedStr> = "description",
        mime_type: Option<BoundedStr> = "mime-type",
        annotations: Option<Annotations> = "annotations",
        icons: BoundedList<Icon> = "icons",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `prompt-argument`
    PromptArgument => prompts::PromptArgument {
        name: BoundedStr = "name",
        title: Option<BoundedStr> = "title",
        description: Option<BoundedStr> = "description",
        required: bool = "required",
    }
);

record!(
    /// `prompt`
    Prompt => prompts::Prompt {
        name: BoundedStr = "name",
        title: Option<BoundedStr> = "title",
        description: Option<BoundedStr> = "description",
        arguments: BoundedList<PromptArgument> = "arguments",
        icons: BoundedList<Icon> = "icons",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `prompt-message`
    PromptMessage => prompts::PromptMessage {
        role: types::Role = "role",
        content: Content = "content",
    }
);

record!(
    /// `prompt-result`
    PromptResult => prompts::PromptResult {
        description: Option<BoundedStr> = "description",
        messages: BoundedList<PromptMessage> = "messages",
        meta: Option<BoundedStr> = "meta",
    }
);

record!(
    /// `completion`
    Completion => completions::Completion {
        values: BoundedList<BoundedStr> = "values",
        total: Option<u32> = "total",
        has_more: bool = "has-more",
    }
);

/// `elicitation-mode`
#[derive(ComponentType, Lift)]
#[component(variant)]
pub enum ElicitationMode {
    /// `form`
    #[component(name = "form")]
    Form(BoundedStr),
    /// `url`
    #[component(name = "url")]
    Url(BoundedStr),
}

impl IntoOwned for ElicitationMode {
    type Owned = host::ElicitationMode;
    fn into_owned(self) -> Self::Owned {
        match self {
            ElicitationMode::Form(schema) => host::ElicitationMode::Form(schema.into_owned()),
            ElicitationMode::Url(url) => host::ElicitationMode::Url(url.into_owned()),
        }
    }
}

record!(
    /// `elicitation-request`
    ElicitationRequest => host::ElicitationRequest {
        message: BoundedStr = "message",
        mode: ElicitationMode = "mode",
    }
);

record!(
    /// `sampling-message`
    SamplingMessage => host::SamplingMessage {
        role: types::Role = "role",
        content: Content = "content",
    }
);

record!(
    /// `sampling-request`
    SamplingRequest => host::SamplingRequest {
        messages: BoundedList<SamplingMessage> = "messages",
        system_prompt: Option<BoundedStr> = "system-prompt",
        max_tokens: u32 = "max-tokens",
        temperature: Option<f64> = "temperature",
        stop_sequences: BoundedList<BoundedStr> = "stop-sequences",
        extra: Option<BoundedStr> = "extra",
    }
);

/// `question`
#[derive(ComponentType, Lift)]
#[component(variant)]
pub(crate) enum Question {
    /// `elicit`
    #[component(name = "elicit")]
    Elicit(ElicitationRequest),
    /// `sample`
    #[component(name = "sample")]
    Sample(SamplingRequest),
    /// `roots`
    #[component(name = "roots")]
    Roots,
}

impl IntoOwned for Question {
    type Owned = host::Question;
    fn into_owned(self) -> Self::Owned {
        match self {
            Question::Elicit(r) => host::Question::Elicit(r.into_owned()),
            Question::Sample(r) => host::Question::Sample(r.into_owned()),
            Question::Roots => host::Question::Roots,
        }
    }
}
