//! What replicas say to each other in `NOTIFY` payloads (and in spilled
//! `wasm_mcp_events` rows): one typed, versioned [`Note`].
//!
//! The version rule: `v` is [`BUS_VERSION`] when written here; absent, 1
//! (what replicas wrote before versions). A field is added beside the
//! others without a new version (readers ignore fields they do not know,
//! and fields they miss take their defaults); `v` goes up only for a
//! change an older reader cannot safely read. A reader meeting a `v` newer
//! than it knows ignores that note: it is counted in
//! `wasm_mcp_cluster_unknown_records_total{record="bus_event"}` and logged
//! once at warn.
//!
//! The keys the previous version reads are kept as they were: an event's
//! `list`, `resource`, `plugin`, `task`, `session_ended` (with `from`,
//! under `event`), answers' `to` and `answers`, and a spilled note's
//! `spilled`. Version 2 adds a task's `status` and `status_message` beside
//! `task`, a host's `hello` (it decides relayed operations), and the relay
//! of a task operation to the host running the task (`relay`, `cancel`)
//! and its `reply` with the `decision`: all addressed with `to`, which a
//! host of version 1 ignores unless it is the one named (and a relay is
//! sent only to a host that said `hello`).

use crate::runtime::host_types::ListKind;
use crate::server::bus::Decision;
use crate::server::tasks::Status;
use crate::server::ServerEvent;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version of [`Note`] this host writes, and the newest it reads.
pub const BUS_VERSION: u32 = 2;

fn version_one() -> u32 {
    1
}

/// One notification between replicas. Which fields are set says what it
/// is ([`Note::meaning`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// The version (absent: 1).
    #[serde(default = "version_one")]
    pub v: u32,
    /// The replica that sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The one replica it is for (others ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// A server event for every replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Body>,
    /// The note is in row `spilled` of `wasm_mcp_events` (too big).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spilled: Option<i64>,
    /// Answers for a task are in row `answers` of `wasm_mcp_answers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<i64>,
    /// The sender's number for a relayed operation (the answers of
    /// `answers`, or the cancel of `cancel`): decide it and reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<u64>,
    /// Cancel this task (a relayed operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<String>,
    /// The decision on the relayed operation of this number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<u64>,
    /// The decision itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<WireDecision>,
    /// The sender decides relayed operations (sent now and then).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hello: bool,
}

/// A server event as replicas send it: the keys of the version before
/// versions, and what version 2 adds beside them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// The catalogue's list of this kind changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
    /// The resource at this URI changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// A new version of this plugin replaced the old one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// This task changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Its new status (version 2; a name this version does not know reads
    /// as "not said": the listener reads the task again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why it is in that status (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The client ended this handshake session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_ended: Option<String>,
    /// What this handshake session settled changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_changed: Option<String>,
    /// The task whose answers these are (a version before the answers
    /// rows sent them to every replica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<String>,
    /// Those answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<Map<String, Value>>,
}

/// A decision as sent back: applied or not, or the error refusing it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireDecision {
    /// Whether the operation took effect.
    #[serde(default)]
    pub applied: bool,
    /// The JSON-RPC error object refusing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

impl From<&Decision> for WireDecision {
    fn from(decision: &Decision) -> Self {
        match decision {
            Ok(applied) => WireDecision {
                applied: *applied,
                error: None,
            },
            Err(error) => WireDecision {
                applied: false,
                error: Some(error.clone()),
            },
        }
    }
}

impl From<WireDecision> for Decision {
    fn from(decision: WireDecision) -> Self {
        match decision.error {
            Some(error) => Err(error),
            None => Ok(decision.applied),
        }
    }
}

/// What a note means to the replica that reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Meaning {
    /// Nothing for this replica (its own, addressed to another, an event
    /// kind it does not know).
    Nothing,
    /// Written by a newer version than this one reads: ignored (counted).
    Newer(u32),
    /// Read row `n` of `wasm_mcp_events` for the note itself.
    Spilled(i64),
    /// A server event.
    Event(ServerEvent),
    /// The old-style answers of a task, to every replica.
    OldAnswers {
        /// The task.
        task: String,
        /// The answers.
        responses: Map<String, Value>,
    },
    /// Take row `row` of `wasm_mcp_answers`: answers for a task running
    /// here; relayed by `relay` (sender and number) when it waits for the
    /// decision.
    Answers {
        /// The row.
        row: i64,
        /// Who waits for the decision, and its number.
        relay: Option<(String, u64)>,
    },
    /// Cancel `task`, running here, for `from`'s relay `id`.
    Cancel {
        /// The task.
        task: String,
        /// The host that relayed it.
        from: String,
        /// Its number there.
        id: u64,
    },
    /// The decision on this host's relay `id`.
    Reply {
        /// The relay's number.
        id: u64,
        /// The decision.
        decision: Decision,
    },
    /// Host `from` decides relayed operations.
    Hello(String),
}

impl Note {
    /// An event from `from`.
    pub fn event(from: &str, event: &ServerEvent) -> Option<Note> {
        Some(Note {
            v: BUS_VERSION,
            from: Some(from.to_owned()),
            event: Some(encode(event)?),
            ..Note::default()
        })
    }

    /// `from` says it decides relayed operations.
    pub fn hello(from: &str) -> Note {
        Note {
            v: BUS_VERSION,
            from: Some(from.to_owned()),
            hello: true,
            ..Note::default()
        }
    }

    /// Answers in row `row`, for `to`; relayed by `from` as `relay` when
    /// given.
    pub fn answers(to: &str, row: i64, relay: Option<(&str, u64)>) -> Note {
        Note {
            v: BUS_VERSION,
            from: relay.map(|(from, _)| from.to_owned()),
            to: Some(to.to_owned()),
            answers: Some(row),
            relay: relay.map(|(_, id)| id),
            ..Note::default()
        }
    }

    /// `from`'s relay `id`: cancel `task`, which `to` runs.
    pub fn cancel(from: &str, to: &str, task: &str, id: u64) -> Note {
        Note {
            v: BUS_VERSION,
            from: Some(from.to_owned()),
            to: Some(to.to_owned()),
            relay: Some(id),
            cancel: Some(task.to_owned()),
            ..Note::default()
        }
    }

    /// `from`'s decision on `to`'s relay `id`.
    pub fn reply(from: &str, to: &str, id: u64, decision: &Decision) -> Note {
        Note {
            v: BUS_VERSION,
            from: Some(from.to_owned()),
            to: Some(to.to_owned()),
            reply: Some(id),
            decision: Some(decision.into()),
            ..Note::default()
        }
    }

    /// A note in row `row` of `wasm_mcp_events`.
    pub fn spilled(row: i64) -> Note {
        Note {
            v: BUS_VERSION,
            spilled: Some(row),
            ..Note::default()
        }
    }

    /// As sent.
    pub fn text(&self) -> String {
        serde_json::to_string(self).expect("a note is JSON")
    }

    /// A note as sent; an error when it is not one.
    pub fn parse(text: &str) -> serde_json::Result<Note> {
        serde_json::from_str(text)
    }

    /// What this note means to replica `me`.
    pub fn meaning(self, me: &str) -> Meaning {
        if self.v > BUS_VERSION {
            return Meaning::Newer(self.v);
        }
        if let Some(to) = &self.to {
            if to != me {
                return Meaning::Nothing;
            }
            let relay = self.from.clone().zip(self.relay);
            if let Some(row) = self.answers {
                return Meaning::Answers { row, relay };
            }
            if let (Some(task), Some((from, id))) = (self.cancel, relay) {
                return Meaning::Cancel { task, from, id };
            }
            if let (Some(id), Some(decision)) = (self.reply, self.decision) {
                return Meaning::Reply {
                    id,
                    decision: decision.into(),
                };
            }
            return Meaning::Nothing;
        }
        if let Some(row) = self.spilled {
            return Meaning::Spilled(row);
        }
        if self.from.as_deref() == Some(me) {
            // No echo: a replica does not hear what it sent.
            return Meaning::Nothing;
        }
        if self.hello {
            return self.from.map_or(Meaning::Nothing, Meaning::Hello);
        }
        let Some(body) = self.event else {
            return Meaning::Nothing;
        };
        if let (Some(task), Some(responses)) = (body.answered.clone(), body.responses.clone()) {
            return Meaning::OldAnswers { task, responses };
        }
        decode(body).map_or(Meaning::Nothing, Meaning::Event)
    }
}

fn kind_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
    }
}

/// `event` as sent to other replicas; `None` for what stays here.
pub fn encode(event: &ServerEvent) -> Option<Body> {
    let mut body = Body::default();
    match event {
        ServerEvent::ListChanged(kind) => body.list = Some(kind_name(*kind).to_owned()),
        ServerEvent::ResourceUpdated(uri) => body.resource = Some(uri.clone()),
        ServerEvent::PluginReplaced(plugin) => body.plugin = Some(plugin.clone()),
        ServerEvent::TaskChanged {
            id,
            status,
            message,
        } => {
            body.task = Some(id.clone());
            body.status = status.map(|s| s.as_str().to_owned());
            body.status_message = message.clone();
        }
        ServerEvent::SessionEnded(id) => body.session_ended = Some(id.clone()),
        ServerEvent::SessionChanged(id) => body.session_changed = Some(id.clone()),
        ServerEvent::Log { .. } | ServerEvent::Alert { .. } | ServerEvent::Shutdown => return None,
    }
    Some(body)
}

/// The event `body` says; `None` for a kind this version does not know.
/// The keys are tried in the order the version before versions tried them.
pub fn decode(body: Body) -> Option<ServerEvent> {
    if let Some(list) = body.list {
        let kind = [ListKind::Tools, ListKind::Prompts, ListKind::Resources]
            .into_iter()
            .find(|k| kind_name(*k) == list)?;
        return Some(ServerEvent::ListChanged(kind));
    }
    if let Some(uri) = body.resource {
        return Some(ServerEvent::ResourceUpdated(uri));
    }
    if let Some(plugin) = body.plugin {
        return Some(ServerEvent::PluginReplaced(plugin));
    }
    if let Some(id) = body.task {
        // A status this version does not know is not said: the listener
        // reads the task again.
        let status = body.status.as_deref().and_then(Status::known);
        return Some(ServerEvent::TaskChanged {
            id,
            status,
            message: status.and(body.status_message),
        });
    }
    if let Some(id) = body.session_ended {
        return Some(ServerEvent::SessionEnded(id));
    }
    if let Some(id) = body.session_changed {
        return Some(ServerEvent::SessionChanged(id));
    }
    None
}

#[cfg(test)]
mod tests;
