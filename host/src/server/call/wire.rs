//! What a call sends the client, as types: the requests a plugin's
//! questions become, its log messages and progress, the cancellation of a
//! question, and a 2026-07-28 `input_required` result. The plugin's own
//! JSON (a schema, sampling extras, its result) passes through as a
//! [`Value`].

use serde::Serialize;
use serde_json::{Map, Value};

/// `elicitation/create` params.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum ElicitationParams<'a> {
    /// A form: the plugin's schema for the answer.
    #[serde(rename_all = "camelCase")]
    Form {
        /// What the user is asked.
        message: &'a str,
        /// The plugin's JSON schema of the answer.
        requested_schema: Value,
    },
    /// A URL the user is sent to.
    #[serde(rename_all = "camelCase")]
    Url {
        /// Always `url`.
        mode: &'static str,
        /// What the user is asked.
        message: &'a str,
        /// Where to send the user.
        url: &'a str,
        /// The id of this elicitation.
        elicitation_id: &'a str,
    },
}

/// `sampling/createMessage` params: the plugin's extras, with the host's
/// fields over them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SamplingParams<'a> {
    /// The plugin's extra params (its own JSON), overridden by the fields
    /// below.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// At most this many tokens.
    pub max_tokens: u32,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<&'a str>,
    /// The sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Where to stop; left out when empty.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub stop_sequences: &'a [String],
}

/// One message of a sampling request.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SamplingMessage {
    /// Whose it is.
    pub role: crate::protocol::model::Role,
    /// Its content block.
    pub content: Value,
}

/// A question as the 2026-07-28 `inputRequests` entry (or a stored
/// pending request): `{ method, params }`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InputRequest<'a> {
    /// The MCP method.
    pub method: &'a str,
    /// Its params.
    pub params: &'a Value,
}

/// `notifications/message` params.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LogMessage<'a> {
    /// The level's name.
    pub level: &'a str,
    /// Who logs it (the plugin, or the host).
    pub logger: &'a str,
    /// The message.
    pub data: &'a str,
}

/// `notifications/progress` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Progress<'a> {
    /// The request's token.
    pub progress_token: &'a Value,
    /// How far it is.
    pub progress: f64,
    /// Out of how much, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What it is doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `notifications/cancelled` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Cancelled<'a> {
    /// The request cancelled.
    pub request_id: &'a Value,
    /// Why.
    pub reason: &'a str,
}

/// A 2026-07-28 `input_required` result: the questions, and the state to
/// send back with their answers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InputRequiredResult<'a> {
    /// Always `input_required` (`ResultType::InputRequired`).
    pub result_type: &'static str,
    /// The questions, by key.
    pub input_requests: &'a Map<String, Value>,
    /// The state to send back.
    pub request_state: &'a str,
}

/// The data of a refusal that needs a client capability:
/// `{"requiredCapabilities": {CAPABILITY: {}}}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequiredCapabilities {
    /// The capabilities, each an empty object.
    pub required_capabilities: Map<String, Value>,
}

impl RequiredCapabilities {
    /// The data naming `capability`.
    pub(crate) fn one(capability: &str) -> Self {
        let empty = Value::Object(Map::new());
        Self {
            required_capabilities: Map::from_iter([(capability.to_owned(), empty)]),
        }
    }
}
