//! The contract's typed values in MCP's JSON shape.

use crate::protocol::model;
use crate::registry::ToolEntry;
use crate::runtime::{completions, prompts, resources, tools, types};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{Map, Value};

/// Parses JSON text a plugin produced; `what` names it in the error.
pub fn plugin_json(text: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("the plugin returned invalid JSON for {what}: {e}"))
}

/// `_meta` is only sent when it is a JSON object.
fn meta(meta: &Option<String>) -> Option<Map<String, Value>> {
    match serde_json::from_str(meta.as_deref()?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

fn role(role: types::Role) -> model::Role {
    match role {
        types::Role::User => model::Role::User,
        types::Role::Assistant => model::Role::Assistant,
    }
}

fn annotations(a: &Option<types::Annotations>) -> Option<model::Annotations> {
    let a = a.as_ref()?;
    Some(model::Annotations {
        audience: a.audience.iter().map(|r| role(*r)).collect(),
        priority: a.priority,
        last_modified: a.last_modified.clone(),
    })
}

fn icons(icons: &[types::Icon]) -> Vec<model::Icon> {
    icons
        .iter()
        .map(|i| model::Icon {
            src: i.src.clone(),
            mime_type: i.mime_type.clone(),
            sizes: i.sizes.clone(),
            theme: i.theme.clone(),
        })
        .collect()
}

fn contents(c: &types::ResourceContents) -> model::ResourceContents {
    model::ResourceContents {
        uri: c.uri.clone(),
        mime_type: c.mime_type.clone(),
        body: match &c.body {
            types::ResourceBody::Text(text) => model::Body::Text(text.clone()),
            types::ResourceBody::Blob(bytes) => model::Body::Blob(B64.encode(bytes)),
        },
        meta: meta(&c.meta),
    }
}

/// `ResourceContents`.
pub fn resource_contents(c: &types::ResourceContents) -> Value {
    model::to_json(&contents(c))
}

/// A skill file's contents (`resources/read`): text when it is UTF-8,
/// else a blob.
pub fn skill_file_contents(file: &crate::skills::SkillFile) -> Value {
    let body = match std::str::from_utf8(&file.bytes) {
        Ok(text) => model::Body::Text(text.to_owned()),
        Err(_) => model::Body::Blob(B64.encode(&file.bytes)),
    };
    model::to_json(&model::ResourceContents {
        uri: file.uri.clone(),
        mime_type: Some(file.mime.to_string()),
        body,
        meta: None,
    })
}

fn content_block(c: &types::Content) -> model::Content {
    use model::ContentKind as Kind;
    let (kind, ann, meta_text) = match c {
        types::Content::Text(t) => (
            Kind::Text {
                text: t.text.clone(),
            },
            &t.annotations,
            &t.meta,
        ),
        types::Content::Image(m) | types::Content::Audio(m) => {
            let (data, mime_type) = (B64.encode(&m.data), m.mime_type.clone());
            let kind = if matches!(c, types::Content::Image(_)) {
                Kind::Image { data, mime_type }
            } else {
                Kind::Audio { data, mime_type }
            };
            (kind, &m.annotations, &m.meta)
        }
        types::Content::ResourceLink(l) => (
            Kind::ResourceLink(model::ResourceLink {
                uri: l.uri.clone(),
                name: l.name.clone(),
                title: l.title.clone(),
                description: l.description.clone(),
                mime_type: l.mime_type.clone(),
                size: l.size,
            }),
            &l.annotations,
            &l.meta,
        ),
        types::Content::Embedded(e) => (
            Kind::Resource {
                resource: contents(&e.contents),
            },
            &e.annotations,
            &e.meta,
        ),
    };
    model::Content {
        kind,
        annotations: annotations(ann),
        meta: meta(meta_text),
    }
}

/// A content block.
pub fn content(c: &types::Content) -> Value {
    model::to_json(&content_block(c))
}

/// A tool as listed, under the name clients call it by, with its schemas
/// as parsed when its plugin loaded.
pub fn tool(entry: &ToolEntry, with_output_schema: bool) -> Value {
    let t = &entry.tool;
    let task_support = match t.task_support {
        tools::TaskSupport::Forbidden => None,
        tools::TaskSupport::Optional => Some("optional"),
        tools::TaskSupport::Required => Some("required"),
    };
    model::to_json(&model::Tool {
        name: entry.name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        input_schema: (*entry.input_schema).clone(),
        output_schema: entry
            .output_schema
            .as_deref()
            .filter(|_| with_output_schema)
            .cloned(),
        annotations: t.annotations.as_ref().map(|a| model::ToolAnnotations {
            title: a.title.clone(),
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        }),
        execution: task_support.map(|task_support| model::Execution { task_support }),
        icons: icons(&t.icons),
        meta: meta(&t.meta),
    })
}

/// A `CallToolResult`.
pub fn call_result(r: &tools::CallResult) -> Result<Value, String> {
    let structured_content = match &r.structured_content {
        Some(text) => Some(plugin_json(text, "structured-content")?),
        None => None,
    };
    Ok(model::to_json(&model::CallToolResult {
        content: r.content.iter().map(content_block).collect(),
        structured_content,
        is_error: r.is_error,
        meta: meta(&r.meta),
    }))
}

/// A tool error result the model can read.
pub fn tool_error(message: &str) -> Value {
    model::to_json(&model::CallToolResult {
        content: vec![model::Content {
            kind: model::ContentKind::Text {
                text: message.to_owned(),
            },
            annotations: None,
            meta: None,
        }],
        structured_content: None,
        is_error: true,
        meta: None,
    })
}

/// A `Resource` as listed.
pub fn resource(r: &resources::Resource) -> Value {
    model::to_json(&model::Resource {
        uri: r.uri.clone(),
        name: r.name.clone(),
        title: r.title.clone(),
        description: r.description.clone(),
        mime_type: r.mime_type.clone(),
        size: r.size,
        annotations: annotations(&r.annotations),
        icons: icons(&r.icons),
        meta: meta(&r.meta),
    })
}

/// A `ResourceTemplate` as listed.
pub fn template(t: &resources::ResourceTemplate) -> Value {
    model::to_json(&model::ResourceTemplate {
        uri_template: t.uri_template.clone(),
        name: t.name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        mime_type: t.mime_type.clone(),
        annotations: annotations(&t.annotations),
        icons: icons(&t.icons),
        meta: meta(&t.meta),
    })
}

/// A `Prompt` as listed, under the name clients get it by.
pub fn prompt(name: &str, p: &prompts::Prompt) -> Value {
    model::to_json(&model::Prompt {
        name: name.to_owned(),
        title: p.title.clone(),
        description: p.description.clone(),
        arguments: p
            .arguments
            .iter()
            .map(|a| model::PromptArgument {
                name: a.name.clone(),
                title: a.title.clone(),
                description: a.description.clone(),
                required: a.required,
            })
            .collect(),
        icons: icons(&p.icons),
        meta: meta(&p.meta),
    })
}

fn message(m: &prompts::PromptMessage) -> model::PromptMessage {
    model::PromptMessage {
        role: role(m.role),
        content: content_block(&m.content),
    }
}

/// A `GetPromptResult`.
pub fn prompt_result(r: &prompts::PromptResult) -> Value {
    model::to_json(&model::GetPromptResult {
        description: r.description.clone(),
        messages: r.messages.iter().map(message).collect(),
        meta: meta(&r.meta),
    })
}

/// The most completion values sent, as MCP requires.
pub const MAX_COMPLETIONS: usize = 100;

/// A `CompleteResult`.
pub fn completion(c: &completions::Completion) -> Value {
    let values: Vec<String> = c.values.iter().take(MAX_COMPLETIONS).cloned().collect();
    let has_more = c.has_more || c.values.len() > MAX_COMPLETIONS;
    let total = c.total.map(|total| total.max(values.len() as u32));
    model::to_json(&model::CompleteResult {
        completion: model::Completion {
            values,
            total,
            has_more,
        },
    })
}

/// The MCP name of a log level.
pub fn log_level_name(level: types::LogLevel) -> &'static str {
    use types::LogLevel::*;
    match level {
        Debug => "debug",
        Info => "info",
        Notice => "notice",
        Warning => "warning",
        Error => "error",
        Critical => "critical",
        Alert => "alert",
        Emergency => "emergency",
    }
}

/// Parses an MCP log level name.
pub fn parse_log_level(name: &str) -> Option<types::LogLevel> {
    use types::LogLevel::*;
    Some(match name {
        "debug" => Debug,
        "info" => Info,
        "notice" => Notice,
        "warning" => Warning,
        "error" => Error,
        "critical" => Critical,
        "alert" => Alert,
        "emergency" => Emergency,
        _ => return None,
    })
}

/// The severity rank of a level (debug = 0 … emergency = 7).
pub fn severity(level: types::LogLevel) -> u8 {
    level as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use types::{Annotations, Content, MediaContent, ResourceBody, ResourceContents, Role};

    fn text(text: &str) -> Content {
        Content::Text(types::TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        })
    }

    #[test]
    fn a_call_result_carries_content_structure_errors_and_object_meta_only() {
        let result = tools::CallResult {
            content: vec![text("hi")],
            structured_content: Some(r#"{"n":1}"#.into()),
            is_error: true,
            meta: Some("[1]".into()),
        };
        let json = call_result(&result).unwrap();
        assert_eq!(
            json,
            json!({ "content": [{ "type": "text", "text": "hi" }], "structuredContent": { "n": 1 }, "isError": true })
        );
        let broken = tools::CallResult {
            structured_content: Some("{".into()),
            ..result
        };
        let error = call_result(&broken).unwrap_err();
        assert!(
            error.contains("invalid JSON for structured-content"),
            "{error}"
        );
    }

    #[test]
    fn media_and_blobs_are_base64_and_annotations_keep_what_is_set() {
        let image = Content::Image(MediaContent {
            data: vec![0, 1, 2],
            mime_type: "image/png".into(),
            annotations: Some(Annotations {
                audience: vec![Role::User],
                priority: Some(0.5),
                last_modified: None,
            }),
            meta: Some(r#"{"k":"v"}"#.into()),
        });
        assert_eq!(
            content(&image),
            json!({ "type": "image", "data": "AAEC", "mimeType": "image/png",
                    "annotations": { "audience": ["user"], "priority": 0.5 }, "_meta": { "k": "v" } })
        );
        let blob = ResourceContents {
            uri: "x:y".into(),
            mime_type: None,
            body: ResourceBody::Blob(vec![255]),
            meta: None,
        };
        assert_eq!(
            resource_contents(&blob),
            json!({ "uri": "x:y", "blob": "/w==" })
        );
    }

    #[test]
    fn completions_are_capped_at_a_hundred_and_say_so() {
        let many = completions::Completion {
            values: (0..150).map(|i| i.to_string()).collect(),
            total: Some(3),
            has_more: false,
        };
        let json = completion(&many);
        assert_eq!(
            json["completion"]["values"].as_array().unwrap().len(),
            MAX_COMPLETIONS
        );
        assert_eq!(json["completion"]["hasMore"], true);
        assert_eq!(
            json["completion"]["total"], 100,
            "total is never below what was sent"
        );
    }

    #[test]
    fn log_levels_round_trip_and_rank_by_severity() {
        for name in [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ] {
            let level = parse_log_level(name).unwrap();
            assert_eq!(log_level_name(level), name);
        }
        assert!(parse_log_level("verbose").is_none());
        let rank = |n| severity(parse_log_level(n).unwrap());
        assert!(rank("debug") < rank("warning") && rank("warning") < rank("emergency"));
    }
}
