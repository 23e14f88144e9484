//! A plugin's questions to the client (elicitation, sampling, roots) as MCP
//! requests, and the client's answers back as the contract's types.

use crate::runtime::host_types::{
    Answer, ElicitationAction, ElicitationMode, ElicitationRequest, ElicitationResponse, Question,
    Root, SamplingRequest, SamplingResponse,
};
use crate::runtime::types;
use crate::server::convert;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// What kind of answer a question expects.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
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
pub struct Wanted {
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
    pub fn request(&self) -> Value {
        json!({ "method": self.method, "params": self.params })
    }

    /// Reads the client's answer.
    pub fn parse(&self, answer: &Value) -> Result<Answer, String> {
        let answer = answer.clone();
        match self.kind {
            Kind::Elicit => elicitation_result(answer).map(Answer::Elicit),
            Kind::Sample => sampling_result(answer).map(Answer::Sample),
            Kind::Roots => roots_result(answer).map(Answer::Roots),
        }
    }
}

/// Whether `response` reads as the client's answer to a `method` request.
pub fn check_response(method: &str, response: &Value) -> Result<(), String> {
    let response = response.clone();
    match method {
        "elicitation/create" => elicitation_result(response).map(drop),
        "sampling/createMessage" => sampling_result(response).map(drop),
        "roots/list" => roots_result(response).map(drop),
        other => Err(format!("no answer is expected for {other}")),
    }
}

/// The capability, MCP request and answer kind of a plugin's question.
pub fn describe(
    key: &str,
    question: &Question,
) -> (
    &'static [&'static str],
    Kind,
    &'static str,
    Result<Value, String>,
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
        Question::Roots => (&["roots"], Kind::Roots, "roots/list", Ok(json!({}))),
    }
}

/// The client capability a question needs, as a path into the client's
/// declared capabilities.
pub fn elicitation_capability(request: &ElicitationRequest) -> &'static [&'static str] {
    match request.mode {
        ElicitationMode::Form(_) => &["elicitation"],
        ElicitationMode::Url(_) => &["elicitation", "url"],
    }
}

/// `elicitation/create` params.
pub fn elicitation_params(request: &ElicitationRequest, id: &str) -> Result<Value, String> {
    Ok(match &request.mode {
        ElicitationMode::Form(schema) => json!({
            "message": request.message,
            "requestedSchema": convert::plugin_json(schema, "an elicitation schema")?,
        }),
        ElicitationMode::Url(url) => json!({
            "mode": "url",
            "message": request.message,
            "url": url,
            "elicitationId": id,
        }),
    })
}

/// An `elicitation/create` result.
pub fn elicitation_result(result: Value) -> Result<ElicitationResponse, String> {
    if !result.is_object() {
        return Err("the client's elicitation answer is not an object".into());
    }
    let action = match result.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitationAction::Accept,
        Some("decline") => ElicitationAction::Decline,
        Some("cancel") => ElicitationAction::Cancel,
        other => {
            return Err(format!(
                "the client answered with an unknown action {other:?}"
            ))
        }
    };
    let content = match result.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => Some(Value::Object(c.clone()).to_string()),
        Some(_) => return Err("the client's elicitation content is not an object".into()),
    };
    Ok(ElicitationResponse { action, content })
}

/// `sampling/createMessage` params.
pub fn sampling_params(request: &SamplingRequest) -> Result<Value, String> {
    let mut params = Map::new();
    if let Some(extra) = &request.extra {
        match convert::plugin_json(extra, "sampling request extras")? {
            Value::Object(extra) => params.extend(extra),
            _ => return Err("sampling request extras must be a JSON object".into()),
        }
    }
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| json!({ "role": role_name(m.role), "content": convert::content(&m.content) }))
        .collect();
    params.insert("messages".into(), json!(messages));
    params.insert("maxTokens".into(), json!(request.max_tokens));
    if let Some(system) = &request.system_prompt {
        params.insert("systemPrompt".into(), json!(system));
    }
    if let Some(t) = request.temperature {
        params.insert("temperature".into(), json!(t));
    }
    if !request.stop_sequences.is_empty() {
        params.insert("stopSequences".into(), json!(request.stop_sequences));
    }
    Ok(Value::Object(params))
}

fn role_name(role: types::Role) -> &'static str {
    match role {
        types::Role::User => "user",
        types::Role::Assistant => "assistant",
    }
}

/// A `sampling/createMessage` result.
pub fn sampling_result(result: Value) -> Result<SamplingResponse, String> {
    let role = match result.get("role").and_then(Value::as_str) {
        Some("user") => types::Role::User,
        Some("assistant") | None => types::Role::Assistant,
        Some(other) => {
            return Err(format!(
                "the client answered with an unknown role {other:?}"
            ))
        }
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
fn content_from_json(block: &Value) -> Result<types::Content, String> {
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
                .map_err(|e| format!("the client's {kind} is not base64: {e}"))?;
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
        other => Err(format!(
            "the client answered with content of an unsupported type {other:?}"
        )),
    }
}

/// A `roots/list` result.
pub fn roots_result(result: Value) -> Result<Vec<Root>, String> {
    let roots = result
        .get("roots")
        .and_then(Value::as_array)
        .ok_or("the client's roots/list answer has no roots")?;
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
