//! Per-connection session state (handshake revisions) and the era of each
//! request: a `_meta` protocol version makes it stateless (2026-07-28).

use super::convert::parse_log_level;
use crate::protocol::{meta, ErrorCode, HeaderParameter, Method, Revision, RpcError};
use crate::registry::Catalogue;
use crate::runtime::types::LogLevel;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// The state an `initialize` handshake creates.
#[derive(Debug, Default)]
pub struct Session {
    /// The negotiated revision, once `initialize` was answered.
    pub version: Option<Revision>,
    /// The client's declared capabilities.
    pub client_capabilities: Value,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The level set by `logging/setLevel`; `None` sends every level.
    pub log_level: Option<LogLevel>,
    /// URIs subscribed with `resources/subscribe`.
    pub subscriptions: HashSet<String>,
    /// The client's roots as local folders, when it declared the `roots`
    /// capability (empty until it answers `roots/list`); `None` when it did
    /// not, and plugins see every granted folder.
    pub client_roots: Option<Arc<Vec<PathBuf>>>,
}

/// What is settled of a request before it is served, once: its era (the
/// revision it speaks), its method, and, when a transport checked it
/// against the catalogue already (a stateless `tools/call`'s header
/// parameters), that very catalogue, so the call is served by what it
/// was checked against.
pub struct Settled {
    pub(super) era: Era,
    pub(super) method: Option<Method>,
    pub(super) catalogue: Option<Arc<Catalogue>>,
}

/// A stateless request on its way in, before its headers are checked:
/// its method, and for a `tools/call` the catalogue it is checked against
/// and then served by (see [`Settled`]).
pub struct Arriving {
    pub(super) method: Option<Method>,
    pub(super) catalogue: Option<Arc<Catalogue>>,
}

impl Arriving {
    /// The arguments the request must repeat in headers (its tool's).
    pub fn header_parameters(&self, params: &Map<String, Value>) -> &[HeaderParameter] {
        let name = params.get("name").and_then(Value::as_str);
        let tool = self
            .catalogue
            .as_ref()
            .zip(name)
            .and_then(|(c, n)| c.tool(n));
        tool.map_or(&[], |t| &t.header_parameters[..])
    }
}

/// The wire of tasks a request speaks (and which one created a task: it
/// decides the task's shape on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// 2025-11-25 (`task` param, `tasks/result`).
    Handshake,
    /// The 2026-07-28 extension `io.modelcontextprotocol/tasks`.
    Stateless,
}

impl Wire {
    /// Its name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Handshake => "2025-11-25",
            Wire::Stateless => "2026-07-28",
        }
    }

    /// The wire named `text` (as stored).
    pub fn parse(text: &str) -> Wire {
        if text == "2025-11-25" {
            Wire::Handshake
        } else {
            Wire::Stateless
        }
    }
}

/// How one request is to be served.
#[derive(Debug, Clone)]
pub(super) enum Era {
    /// A handshake revision (or no session yet).
    Handshake {
        /// The negotiated revision, if the handshake happened.
        version: Option<Revision>,
    },
    /// The stateless revision; everything comes from the request's `_meta`.
    Stateless {
        /// The request's log level opt-in.
        log_level: Option<LogLevel>,
    },
}

impl Era {
    /// Whether the request is stateless.
    pub(super) fn is_stateless(&self) -> bool {
        matches!(self, Era::Stateless { .. })
    }
}

impl Era {
    /// The revision a request of this era speaks: the stateless one, or
    /// the negotiated one (`None` before the handshake).
    pub(super) fn revision(&self) -> Option<Revision> {
        match self {
            Era::Handshake { version } => *version,
            Era::Stateless { .. } => Some(Revision::LATEST_STATELESS),
        }
    }

    /// The differences between revisions, each named once here.
    ///
    /// The tasks wire the request speaks: the 2025-11-25 `task` param (a
    /// handshake session of 2025-11-25 or later), the 2026-07-28 extension,
    /// or none (older handshake revisions).
    pub(super) fn task_wire(&self) -> Option<Wire> {
        match self {
            Era::Stateless { .. } => Some(Wire::Stateless),
            Era::Handshake { .. } => self
                .revision()
                .is_some_and(Revision::has_handshake_tasks)
                .then_some(Wire::Handshake),
        }
    }

    /// Whether `tools/list` shows each tool's `outputSchema` (not before
    /// 2025-06-18; before the handshake, it does).
    pub(super) fn lists_output_schema(&self) -> bool {
        self.revision().is_none_or(Revision::has_output_schema)
    }

    /// Whether arguments a tool refuses are a tool error the model can see
    /// (from 2025-11-25), rather than -32602.
    pub(super) fn argument_errors_are_tool_errors(&self) -> bool {
        self.revision()
            .is_some_and(Revision::has_argument_tool_errors)
    }

    /// The code of a resource that is not found: -32002 on the handshake
    /// revisions, -32602 on the stateless one.
    pub(super) fn resource_not_found(&self) -> ErrorCode {
        match self {
            Era::Stateless { .. } => ErrorCode::InvalidParams,
            Era::Handshake { .. } => ErrorCode::ResourceNotFound,
        }
    }
}

/// The revisions offered, newest first: all, or the handshake ones only.
pub(super) fn offered_versions(handshake_only: bool) -> Vec<Revision> {
    Revision::newest_first()
        .filter(|r| !(handshake_only && r.is_stateless()))
        .collect()
}

/// -32022, listing the revisions offered (`handshake_only`: the handshake
/// ones, so a client falls back to `initialize`).
pub(super) fn unsupported_version(requested: &Value, handshake_only: bool) -> RpcError {
    RpcError::new(
        ErrorCode::UnsupportedProtocolVersion,
        "Unsupported protocol version",
    )
    .with_data(json!({ "supported": offered_versions(handshake_only), "requested": requested }))
}

/// Decides the era of a request from its `_meta`; with `handshake_only`,
/// a stateless request is refused as an unsupported revision.
pub(super) fn era_of(
    params: &Map<String, Value>,
    session: &Session,
    handshake_only: bool,
) -> Result<Era, RpcError> {
    let request_meta = params.get("_meta").and_then(Value::as_object);
    let Some(requested) = request_meta.and_then(|m| m.get(meta::PROTOCOL_VERSION)) else {
        return Ok(Era::Handshake {
            version: session.version,
        });
    };
    let request_meta = request_meta.expect("checked above");
    let stateless = requested
        .as_str()
        .and_then(Revision::parse)
        .is_some_and(Revision::is_stateless);
    if handshake_only || !stateless {
        return Err(unsupported_version(requested, handshake_only));
    }
    let Some(client_capabilities) = request_meta.get(meta::CLIENT_CAPABILITIES) else {
        return Err(crate::protocol::params::invalid(format!(
            "missing _meta keys: {}",
            meta::CLIENT_CAPABILITIES
        )));
    };
    if !client_capabilities.is_object() {
        return Err(crate::protocol::params::invalid(format!(
            "_meta.{} must be an object",
            meta::CLIENT_CAPABILITIES
        )));
    }
    let log_level = match request_meta.get(meta::LOG_LEVEL) {
        None => None,
        Some(level) => Some(level.as_str().and_then(parse_log_level).ok_or_else(|| {
            crate::protocol::params::invalid(format!("unknown log level {level}"))
        })?),
    };
    Ok(Era::Stateless { log_level })
}
