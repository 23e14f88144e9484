//! The lifecycle: `initialize`, `server/discover`, `ping` (answered in
//! [`super::handle`]) and `logging/setLevel`, and what the server offers.

use super::Request;
use super::{Answer, Answered};
use crate::protocol::model::{
    to_json, DiscoverResult, Empty, Extensions, InitializeResult, ListCapability,
    ResourcesCapability, ServerCapabilities, SkillsExtension, TasksCapability, UiExtension,
};
use crate::protocol::params::{self, Params};
use crate::protocol::{negotiate_handshake, ErrorCode, Revision, RpcError};
use crate::server::session::{Era, Wire};
use crate::server::{convert, Connection};
use serde_json::{Map, Value};
use std::sync::Arc;

/// `server/discover`: the revisions, capabilities and identity.
pub(super) fn discover(request: &Request<'_>) -> Value {
    let server = &request.conn.server;
    to_json(&DiscoverResult {
        supported_versions: Revision::newest_first().collect(),
        capabilities: capabilities(request.era),
        server_info: server.server_info(),
        instructions: server.instructions(),
    })
}

/// `logging/setLevel`: the lowest level the session hears.
pub(super) fn set_level(request: &Request<'_>) -> Answered {
    let level = request
        .params
        .get("level")
        .and_then(Value::as_str)
        .and_then(convert::parse_log_level);
    let level = level.ok_or_else(|| params::invalid("\"level\" must be an MCP log level"))?;
    request.conn.session().log_level = Some(level);
    Ok(Answer::Result(to_json(&Empty {})))
}

/// `initialize`: settles the session's revision and the client's
/// capabilities, once per connection.
pub(in crate::server) fn initialize(
    conn: &Arc<Connection>,
    params: &Map<String, Value>,
) -> Answered {
    let requested = Params(params).str("protocolVersion")?;
    let client_capabilities = params
        .get("capabilities")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let version = negotiate_handshake(requested);
    {
        let mut session = conn.session();
        if session.version.is_some() {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "initialize was already received on this connection",
            ));
        }
        session.version = Some(version);
        if client_capabilities.get("roots").is_some() {
            session.client_roots = Some(Arc::new(Vec::new()));
        }
        session.client_capabilities = client_capabilities;
    }
    let server = &conn.server;
    let era = Era::Handshake {
        version: Some(version),
    };
    Ok(Answer::Result(to_json(&InitializeResult {
        protocol_version: version,
        capabilities: capabilities(&era),
        server_info: server.server_info(),
        instructions: server.instructions(),
    })))
}

/// What the server offers: a function of the revision alone, never of
/// the plugins loaded so far. Plugins come and go while the server runs
/// (the first load may not have ended when a client asks), so everything a
/// plugin may bring is declared from the first answer on, and stays: a
/// list may be empty, a completion may have no values, and each list is
/// announced when it changes.
fn capabilities(era: &Era) -> ServerCapabilities {
    let task_wire = era.task_wire();
    ServerCapabilities {
        logging: (!era.is_stateless()).then_some(Empty {}),
        tools: ListCapability { list_changed: true },
        resources: ResourcesCapability {
            subscribe: true,
            list_changed: true,
        },
        prompts: ListCapability { list_changed: true },
        // A prompt or template whose plugin does not complete answers no
        // values; one not served is invalid params.
        completions: Empty {},
        tasks: (task_wire == Some(Wire::Handshake)).then(TasksCapability::default),
        // Skills come and go with plugins too: the extension is always
        // offered.
        extensions: Extensions {
            skills: SkillsExtension {
                directory_read: true,
            },
            tasks: (task_wire == Some(Wire::Stateless)).then_some(Empty {}),
            // Views (MCP Apps) likewise: a plugin that brings one may load
            // after a client connected.
            ui: UiExtension::default(),
        },
    }
}
