//! Content items and resource contents.

use crate::bindings::wasm_mcp::plugin::types as wit;

/// One item of content in a tool result or a prompt message.
pub type Content = wit::Content;

/// The contents of one resource.
pub type ResourceContents = wit::ResourceContents;

/// Text content.
pub fn text(text: impl Into<String>) -> Content {
    Content::Text(wit::TextContent {
        text: text.into(),
        annotations: None,
        meta: None,
    })
}

/// Image content from raw bytes and a MIME type such as `image/png`.
pub fn image(data: Vec<u8>, mime_type: impl Into<String>) -> Content {
    Content::Image(wit::MediaContent {
        data,
        mime_type: mime_type.into(),
        annotations: None,
        meta: None,
    })
}

/// Audio content from raw bytes and a MIME type such as `audio/wav`.
pub fn audio(data: Vec<u8>, mime_type: impl Into<String>) -> Content {
    Content::Audio(wit::MediaContent {
        data,
        mime_type: mime_type.into(),
        annotations: None,
        meta: None,
    })
}

/// A resource's contents embedded in a result or a message.
pub fn embedded(contents: ResourceContents) -> Content {
    Content::Embedded(wit::EmbeddedResource {
        contents,
        annotations: None,
        meta: None,
    })
}

impl ResourceContents {
    /// Text contents for `uri`.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            body: wit::ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// Binary contents for `uri`.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, data: Vec<u8>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            body: wit::ResourceBody::Blob(data),
            meta: None,
        }
    }
}
