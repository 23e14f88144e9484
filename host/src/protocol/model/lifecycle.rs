//! The lifecycle's results: `initialize`, `server/discover`, and the empty
//! result of `ping`, `logging/setLevel` and the subscriptions.

use crate::protocol::Revision;
use serde::Serialize;

/// A server's name and version (`serverInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerInfo<'a> {
    /// The server's name.
    pub name: &'a str,
    /// Its version.
    pub version: &'a str,
}

/// An empty object: a capability with no options, or a result that says
/// only "done".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Empty {}

/// A list capability: whether its changes are announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListCapability {
    /// Whether `notifications/.../list_changed` is sent.
    pub list_changed: bool,
}

/// The resources capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether a resource can be subscribed to.
    pub subscribe: bool,
    /// Whether changes of the list are announced.
    pub list_changed: bool,
}

/// The 2025-11-25 tasks capability: tasks can be listed and cancelled,
/// and `tools/call` can be asked to run as one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TasksCapability {
    /// `tasks/list` is served.
    pub list: Empty,
    /// `tasks/cancel` is served.
    pub cancel: Empty,
    /// The requests that may run as tasks.
    pub requests: TaskRequests,
}

/// The requests that may run as tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TaskRequests {
    /// Tool requests.
    pub tools: ToolTaskRequests,
}

/// The tool requests that may run as tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ToolTaskRequests {
    /// `tools/call`.
    pub call: Empty,
}

/// The Skills extension's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsExtension {
    /// Whether `resources/directory/read` is served.
    pub directory_read: bool,
}

/// The MCP Apps extension's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiExtension {
    /// The view types served (`meta::UI_MIME_TYPE`).
    pub mime_types: [&'static str; 1],
}

impl Default for UiExtension {
    fn default() -> Self {
        UiExtension {
            mime_types: [crate::protocol::meta::UI_MIME_TYPE],
        }
    }
}

/// The extensions offered, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Extensions {
    /// The Skills extension (`crate::skills::EXTENSION`).
    #[serde(rename = "io.modelcontextprotocol/skills")]
    pub skills: SkillsExtension,
    /// The 2026-07-28 tasks extension (`meta::TASKS_EXTENSION`).
    #[serde(
        rename = "io.modelcontextprotocol/tasks",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks: Option<Empty>,
    /// MCP Apps (`meta::UI_EXTENSION`).
    #[serde(rename = "io.modelcontextprotocol/ui")]
    pub ui: UiExtension,
}

/// What the server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerCapabilities {
    /// `logging/setLevel` (the handshake revisions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<Empty>,
    /// Tools.
    pub tools: ListCapability,
    /// Resources.
    pub resources: ResourcesCapability,
    /// Prompts.
    pub prompts: ListCapability,
    /// Completions.
    pub completions: Empty,
    /// 2025-11-25 tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability>,
    /// The extensions.
    pub extensions: Extensions,
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult<'a> {
    /// The revision the session speaks.
    pub protocol_version: Revision,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: ServerInfo<'a>,
    /// What the client should know, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// The result of `server/discover`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult<'a> {
    /// The revisions served, newest first.
    pub supported_versions: Vec<Revision>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: ServerInfo<'a>,
    /// What the client should know, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::meta;

    #[test]
    fn the_extension_names_are_the_constants() {
        let extensions = Extensions {
            skills: SkillsExtension {
                directory_read: true,
            },
            tasks: Some(Empty {}),
            ui: UiExtension::default(),
        };
        let json = crate::protocol::model::to_json(&extensions);
        assert!(json.get(crate::skills::EXTENSION).is_some(), "{json}");
        assert!(json.get(meta::TASKS_EXTENSION).is_some(), "{json}");
        assert_eq!(json[meta::UI_EXTENSION]["mimeTypes"][0], meta::UI_MIME_TYPE);
    }
}
