//! A plugin's questions to the client (elicitation, sampling, roots) as MCP
//! requests, and the client's answers back as the contract's types.

use super::wire::{ElicitationParams, InputRequest, SamplingMessage, SamplingParams};
use crate::protocol::model::{to_json, Role};
use crate::runtime::host_types::{
    Answer, ElicitationAction, ElicitationMode, ElicitationRequest, ElicitationResponse, Question,
    Root, SamplingRequest, SamplingResponse,
};
use crate::runtime::types;
use crate::server::convert;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{Map, Value};

/// Why the client's answer to a question does not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// No request of this method is asked.
    #[error("no answer is expected for {0}")]
    NotExpected(String),
    /// The elicitation answer is not an object.
    #[error("the client's elicitation answer is not an object")]
    NotAnObject,
    /// The elicitation action is none of accept, decline, cancel.
    #[error("the client answered with an unknown action {0:?}")]
    UnknownAction(Option<String>),
    /// The elicitation content is not an object.
    #[error("the client's elicitation content is not an object")]
    ContentNotAnObject,
    /// The sampled message's role is neither user nor assistant.
    #[error("the client answered with an unknown role {0:?}")]
    UnknownRole(String),
    /// An image or audio block's data is not base64.
    #[error("the client's {kind} is not base64: {error}")]
    NotBase64 {
        /// `image` or `audio`.
        kind: String,
        /// Why not.
        error: base64::DecodeError,
    },
    /// A content block of a type the contract has no place for.
    #[error("the client answered with content of an unsupported type {0:?}")]
    UnsupportedContent(Option<String>),
    /// A `roots/list` answer without its list.
    #[error("the client's roots/list answer has no roots")]
    NoRoots,
}

/// Why a plugin's question cannot be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum QuestionError {
    /// Its JSON (a schema, sampling extras) does not parse.
    #[error("{0}")]
    Plugin(String),
    /// Its sampling extras are not an object.
    #[error("sampling request extras must be a JSON object")]
    ExtrasNotAnObject,
}

/// What kind of answer a question expects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `elicitation/create`
    Elicit,
    /// `sampling/createMessage`
    Sample,
    /// `roots/list`
    Roots,
}

/// A question the client can be asked: its key, its MCP request, and how
/// to read the answer.
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    /// Where its answer goes in the plugin's list of answers.
    pub index: usize,
    /// The plugin's key for it (`inputRequests` key on 2026-07-28).
    pub key: String,
    /// The answer it expects.
    pub kind: Kind,
    /// The MCP method.
    pub method: &'static str,
    /// The MCP params.
    pub params: Value,
}

impl Wanted {
    /// The question as an MCP request (`{ method, params }`).
    pub(crate) fn request(&self) -> Value {
        to_json(&InputRequest {
            method: self.method,
            params: &self.params,
        })
    }

    /// Reads the client's answer.
    pub(crate) fn parse(&self, answer: &Value) -> Result<Answer, AnswerError> {
        let answer = answer.clone();
        match self.kind {
            Kind::Elicit => elicitation_result(answer).map(Answer::Elicit),
            Kind::Sample => sampling_result(answer).map(Answer::Sample),
            Kind::Roots => roots_result(answer).map(Answer::Roots),
        }
    }
}

/// Whether `response` reads as the client's answer to a `method` request.
pub(crate) fn check_response(method: &str, response: &Value) -> Result<(), AnswerError> {
    let response = response.clone();
    match method {
        "elicitation/create" => elicitation_result(response).map(drop),
        "sampling/createMessage" => sampling_result(response).map(drop),
        "roots/list" => roots_result(response).map(drop),
        other => Err(AnswerError::NotExpected(other.to_owned())),
    }
}

/// The capability, MCP request and answer kind of a plugin's question.
pub(crate) fn describe(
    key: &str,
    question: &Question,
) -> (
    &'static [&'static str],
    Kind,
    &'static str,
    Result<Value, QuestionError>,
) {
    match question {
        Question::Elicit(r) => (
            elicitation_capability(r),
            Kind::Elicit,
            "elicitation/create",
            elicitation_params(r, &format!("{key}-{}", crate::protocol::random_id())),
        ),
        Question::Sample(r) => (
            &["sampling"],
            Kind::Sample,
            "sampling/createMessage",
            sampling_params(r),
        ),
        Question::Roots => (
            &["roots"],
            Kind::Roots,
            "roots/list",
            Ok(Value::Object(Map::new())),
        ),
    }
}

/// The client capability a question needs, as a path into the client's
/// declared capabilities.
pub(crate) fn elicitation_capability(request: &ElicitationRequest) -> &'static [&'static str] {
    match request.mode {
        ElicitationMode::Form(_) => &["elicitation"],
        ElicitationMode::Url(_) => &["elicitation", "url"],
    }
}

/// `elicitation/create` params.
pub(crate) fn elicitation_params(
    request: &ElicitationRequest,
    id: &str,
) -> Result<Value, QuestionError> {
    let message = &request.message;
    Ok(to_json(&match &request.mode {
        ElicitationMode::Form(schema) => ElicitationParams::Form {
            message,
            requested_schema: convert::plugin_json(schema, "an elicitation schema")
                .map_err(QuestionError::Plugin)?,
        },
        ElicitationMode::Url(url) => ElicitationParams::Url {
            mode: "url",
            message,
            url,
            elicitation_id: id,
        },
    }))
}

/// An `elicitation/create` result.
pub(crate) fn elicitation_result(result: Value) -> Result<ElicitationResponse, AnswerError> {
    if !result.is_object() {
        return Err(AnswerError::NotAnObject);
    }
    let action = match result.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitationAction::Accept,
        Some("decline") => ElicitationAction::Decline,
        Some("cancel") => ElicitationAction::Cancel,
        other => return Err(AnswerError::UnknownAction(other.map(str::to_owned))),
    };
    let content = match result.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => Some(Value::Object(c.clone()).to_string()),
        Some(_) => return Err(AnswerError::ContentNotAnObject),
    };
    Ok(ElicitationResponse { action, content })
}

/// `sampling/createMessage` params.
pub(crate) fn sampling_params(request: &SamplingRequest) -> Result<Value, QuestionError> {
    let extra = match &request.extra {
        None => Map::new(),
        Some(extra) => match convert::plugin_json(extra, "sampling request extras")
            .map_err(QuestionError::Plugin)?
        {
            Value::Object(extra) => extra,
            _ => return Err(QuestionError::ExtrasNotAnObject),
        },
    };
    let messages = request
        .messages
        .iter()
        .map(|m| SamplingMessage {
            role: role(m.role),
            content: convert::content(&m.content),
        })
        .collect();
    // The host's fields are written after the extras, so they win.
    Ok(to_json(&SamplingParams {
        extra,
        messages,
        max_tokens: request.max_tokens,
        system_prompt: request.system_prompt.as_deref(),
        temperature: request.temperature,
        stop_sequences: &request.stop_sequences,
    }))
}

fn role(role: types::Role) -> Role {
    match role {
        types::Role::User => Role::User,
        types::Role::Assistant => Role::Assistant,
    }
}

/// A `sampling/createMessage` result.
pub(crate) fn sampling_result(result: Value) -> Result<SamplingResponse, AnswerError> {
    let role = match result.get("role").and_then(Value::as_str) {
        Some("user") => types::Role::User,
        Some("assistant") | None => types::Role::Assistant,
        Some(other) => return Err(AnswerError::UnknownRole(other.to_owned())),
    };
    // A newer client may answer with a list of content blocks.
    let content = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.first().cloned().unwrap_or(Value::Null),
        Some(block) => block.clone(),
        None => Value::Null,
    };
    Ok(SamplingResponse {
        role,
        content: content_from_json(&content)?,
        model: result
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        stop_reason: result
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// A content block from the client (text, image or audio).
fn content_from_json(block: &Value) -> Result<types::Content, AnswerError> {
    let text = |key: &str| block.get(key).and_then(Value::as_str);
    match text("type") {
        Some("text") => Ok(types::Content::Text(types::TextContent {
            text: text("text").unwrap_or_default().to_owned(),
            annotations: None,
            meta: None,
        })),
        Some(kind @ ("image" | "audio")) => {
            let data = B64
                .decode(text("data").unwrap_or_default())
                .map_err(|error| AnswerError::NotBase64 {
                    kind: kind.to_owned(),
                    error,
                })?;
            let media = types::MediaContent {
                data,
                mime_type: text("mimeType").unwrap_or_default().to_owned(),
                annotations: None,
                meta: None,
            };
            Ok(if kind == "image" {
                types::Content::Image(media)
            } else {
                types::Content::Audio(media)
            })
        }
        other => Err(AnswerError::UnsupportedContent(other.map(str::to_owned))),
    }
}

/// A `roots/list` result.
pub(crate) fn roots_result(result: Value) -> Result<Vec<Root>, AnswerError> {
    let roots = result
        .get("roots")
        .and_then(Value::as_array)
        .ok_or(AnswerError::NoRoots)?;
    Ok(roots
        .iter()
        .filter_map(|r| {
            Some(Root {
                uri: r.get("uri")?.as_str()?.to_owned(),
                name: r.get("name").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_become_the_contracts_types() {
        let answer =
            elicitation_result(json!({ "action": "accept", "content": { "a": 1 } })).unwrap();
        assert!(matches!(answer.action, ElicitationAction::Accept));
        assert_eq!(answer.content.as_deref(), Some(r#"{"a":1}"#));
        assert!(elicitation_result(json!({ "action": "maybe" })).is_err());
        let sampled = sampling_result(json!({
            "role": "assistant", "model": "m", "content": { "type": "text", "text": "hi" }
        }))
        .unwrap();
        assert!(matches!(sampled.content, types::Content::Text(ref t) if t.text == "hi"));
        assert_eq!(sampled.model, "m");
        let roots =
            roots_result(json!({ "roots": [{ "uri": "file:///a", "name": "a" }] })).unwrap();
        assert_eq!(roots[0].uri, "file:///a");
    }
}
