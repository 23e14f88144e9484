//! The names of MCP methods and notifications: the requests this server
//! serves as a [`Method`], parsed once; everything else as constants.

use super::Revision;

/// A request a client may send this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `initialize` (handshake revisions).
    Initialize,
    /// `ping` (handshake revisions).
    Ping,
    /// `server/discover` (stateless revision).
    Discover,
    /// `logging/setLevel` (handshake revisions).
    SetLogLevel,
    /// `tools/list`.
    ListTools,
    /// `tools/call`.
    CallTool,
    /// `resources/list`.
    ListResources,
    /// `resources/templates/list`.
    ListResourceTemplates,
    /// `resources/read`.
    ReadResource,
    /// `resources/subscribe` (handshake revisions).
    Subscribe,
    /// `resources/unsubscribe` (handshake revisions).
    Unsubscribe,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
    /// `completion/complete`.
    Complete,
    /// `subscriptions/listen` (stateless revision).
    Listen,
    /// `tasks/get`.
    GetTask,
    /// `tasks/result` (2025-11-25).
    TaskResult,
    /// `tasks/list` (2025-11-25).
    ListTasks,
    /// `tasks/cancel`.
    CancelTask,
    /// `tasks/update` (2026-07-28).
    UpdateTask,
    /// `skills/list` (the Skills extension).
    ListSkills,
    /// `skills/get` (the Skills extension).
    GetSkill,
    /// `resources/directory/read` (the Skills extension).
    ReadDirectory,
}

/// Which revisions a method exists on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Every revision.
    Any,
    /// Only with the `initialize` handshake.
    HandshakeOnly,
    /// Only on the stateless revision.
    StatelessOnly,
}

/// How clients may cache a result (2026-07-28 `ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A list: cacheable by anyone for the configured time.
    List,
    /// Private to the requester, not to be reused.
    Private,
    /// No hint.
    None,
}

impl Method {
    /// Every method.
    pub const ALL: [Method; 23] = [
        Method::Initialize,
        Method::Ping,
        Method::Discover,
        Method::SetLogLevel,
        Method::ListTools,
        Method::CallTool,
        Method::ListResources,
        Method::ListResourceTemplates,
        Method::ReadResource,
        Method::Subscribe,
        Method::Unsubscribe,
        Method::ListPrompts,
        Method::GetPrompt,
        Method::Complete,
        Method::Listen,
        Method::GetTask,
        Method::TaskResult,
        Method::ListTasks,
        Method::CancelTask,
        Method::UpdateTask,
        Method::ListSkills,
        Method::GetSkill,
        Method::ReadDirectory,
    ];

    /// The method named `name`, if this server serves it.
    pub fn parse(name: &str) -> Option<Method> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::Discover => "server/discover",
            Method::SetLogLevel => "logging/setLevel",
            Method::ListTools => "tools/list",
            Method::CallTool => "tools/call",
            Method::ListResources => "resources/list",
            Method::ListResourceTemplates => "resources/templates/list",
            Method::ReadResource => "resources/read",
            Method::Subscribe => "resources/subscribe",
            Method::Unsubscribe => "resources/unsubscribe",
            Method::ListPrompts => "prompts/list",
            Method::GetPrompt => "prompts/get",
            Method::Complete => "completion/complete",
            Method::Listen => "subscriptions/listen",
            Method::GetTask => "tasks/get",
            Method::TaskResult => "tasks/result",
            Method::ListTasks => "tasks/list",
            Method::CancelTask => "tasks/cancel",
            Method::UpdateTask => "tasks/update",
            Method::ListSkills => "skills/list",
            Method::GetSkill => "skills/get",
            Method::ReadDirectory => "resources/directory/read",
        }
    }

    /// Which revisions it exists on.
    pub fn availability(self) -> Availability {
        match self {
            Method::Initialize
            | Method::Ping
            | Method::SetLogLevel
            | Method::Subscribe
            | Method::Unsubscribe => Availability::HandshakeOnly,
            Method::Discover | Method::Listen => Availability::StatelessOnly,
            _ => Availability::Any,
        }
    }

    /// Whether a request of `revision` may call it (the `tasks/*` methods
    /// also depend on the wire of tasks, checked where they are served).
    pub fn exists_on(self, revision: Revision) -> bool {
        match self.availability() {
            Availability::Any => true,
            Availability::HandshakeOnly => !revision.is_stateless(),
            Availability::StatelessOnly => revision.is_stateless(),
        }
    }

    /// How clients may cache its result.
    pub fn caching(self) -> Caching {
        match self {
            Method::ListTools
            | Method::ListPrompts
            | Method::ListResources
            | Method::ListResourceTemplates
            | Method::ListSkills
            | Method::GetSkill
            | Method::Discover => Caching::List,
            Method::ReadResource => Caching::Private,
            _ => Caching::None,
        }
    }

    /// Whether its answer depends on the plugins served (a list, a call, a
    /// read, a completion, a subscription to their changes): such a request
    /// waits for the plugins' first load; the others (`initialize`, `ping`,
    /// `server/discover`, tasks) are answered at once.
    pub fn reads_catalogue(self) -> bool {
        matches!(
            self,
            Method::ListTools
                | Method::CallTool
                | Method::ListResources
                | Method::ListResourceTemplates
                | Method::ReadResource
                | Method::Subscribe
                | Method::Listen
                | Method::ListPrompts
                | Method::GetPrompt
                | Method::Complete
                | Method::ListSkills
                | Method::GetSkill
                | Method::ReadDirectory
        )
    }

    /// Whether it is one of the `tasks/*` methods.
    pub fn is_task_method(self) -> bool {
        matches!(
            self,
            Method::GetTask
                | Method::TaskResult
                | Method::ListTasks
                | Method::CancelTask
                | Method::UpdateTask
        )
    }

    /// The param that names what the request is about (a tool or prompt
    /// name, a resource URI, a task id): what the `Mcp-Name` header says.
    pub fn name_param(self) -> Option<&'static str> {
        match self {
            Method::CallTool | Method::GetPrompt => Some("name"),
            Method::ReadResource => Some("uri"),
            Method::GetTask | Method::UpdateTask | Method::CancelTask => Some("taskId"),
            _ => None,
        }
    }
}

/// Notifications, either way.
pub mod notification {
    /// The client ended the handshake.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// A request is cancelled (either way).
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress of a request (either way).
    pub const PROGRESS: &str = "notifications/progress";
    /// The client's roots changed.
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// A log message for the client.
    pub const MESSAGE: &str = "notifications/message";
    /// The tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// The prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// The resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// A subscribed resource changed.
    pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
    /// A 2025-11-25 task's status changed.
    pub const TASK_STATUS: &str = "notifications/tasks/status";
    /// A 2026-07-28 task changed (on a subscription).
    pub const TASKS: &str = "notifications/tasks";
    /// A 2026-07-28 subscription is acknowledged.
    pub const SUBSCRIPTION_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
}

/// Requests this server sends the client.
pub mod client {
    /// Ask the user (elicitation).
    pub const ELICIT: &str = "elicitation/create";
    /// Ask the client's model (sampling).
    pub const CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Ask for the client's roots.
    pub const LIST_ROOTS: &str = "roots/list";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_round_trips_its_name() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.as_str()), Some(m));
        }
        assert_eq!(Method::parse("tools/List"), None);
        assert!(!Method::Ping.exists_on(Revision::V2026_07_28));
        assert!(Method::Ping.exists_on(Revision::V2024_11_05));
        assert!(!Method::Discover.exists_on(Revision::V2025_11_25));
        assert!(Method::CallTool.exists_on(Revision::V2026_07_28));
    }
}
