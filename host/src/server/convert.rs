//! The contract's typed values in MCP's JSON shape.

use crate::registry::ToolEntry;
use crate::runtime::{completions, prompts, resources, tools, types};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// Parses JSON text a plugin produced; `what` names it in the error.
pub fn plugin_json(text: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("the plugin returned invalid JSON for {what}: {e}"))
}

fn put(obj: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        obj.insert(key.into(), value);
    }
}

fn put_str(obj: &mut Map<String, Value>, key: &str, value: &Option<String>) {
    put(obj, key, value.clone().map(Value::String));
}

/// `_meta` is only sent when it is a JSON object.
fn put_meta(obj: &mut Map<String, Value>, meta: &Option<String>) {
    if let Some(Value::Object(m)) = meta.as_deref().and_then(|m| serde_json::from_str(m).ok()) {
        obj.insert("_meta".into(), Value::Object(m));
    }
}

fn role(role: types::Role) -> &'static str {
    match role {
        types::Role::User => "user",
        types::Role::Assistant => "assistant",
    }
}

fn annotations(a: &Option<types::Annotations>) -> Option<Value> {
    let a = a.as_ref()?;
    let mut obj = Map::new();
    if !a.audience.is_empty() {
        obj.insert(
            "audience".into(),
            a.audience.iter().map(|r| json!(role(*r))).collect(),
        );
    }
    put(&mut obj, "priority", a.priority.map(|p| json!(p)));
    put_str(&mut obj, "lastModified", &a.last_modified);
    Some(Value::Object(obj))
}

fn icons(icons: &[types::Icon]) -> Option<Value> {
    if icons.is_empty() {
        return None;
    }
    Some(
        icons
            .iter()
            .map(|i| {
                let mut obj = Map::new();
                obj.insert("src".into(), json!(i.src));
                put_str(&mut obj, "mimeType", &i.mime_type);
                if !i.sizes.is_empty() {
                    obj.insert("sizes".into(), json!(i.sizes));
                }
                put_str(&mut obj, "theme", &i.theme);
                Value::Object(obj)
            })
            .collect(),
    )
}

/// `ResourceContents`.
pub fn resource_contents(c: &types::ResourceContents) -> Value {
    let mut obj = Map::new();
    obj.insert("uri".into(), json!(c.uri));
    put_str(&mut obj, "mimeType", &c.mime_type);
    match &c.body {
        types::ResourceBody::Text(text) => obj.insert("text".into(), json!(text)),
        types::ResourceBody::Blob(bytes) => obj.insert("blob".into(), json!(B64.encode(bytes))),
    };
    put_meta(&mut obj, &c.meta);
    Value::Object(obj)
}

/// A skill file's contents (`resources/read`): text when it is UTF-8,
/// else a blob.
pub fn skill_file_contents(file: &crate::skills::SkillFile) -> Value {
    let mut obj = Map::new();
    obj.insert("uri".into(), json!(file.uri));
    obj.insert("mimeType".into(), json!(file.mime));
    match std::str::from_utf8(&file.bytes) {
        Ok(text) => obj.insert("text".into(), json!(text)),
        Err(_) => obj.insert("blob".into(), json!(B64.encode(&file.bytes))),
    };
    Value::Object(obj)
}

/// A content block.
pub fn content(c: &types::Content) -> Value {
    let mut obj = Map::new();
    let (kind, ann, meta) = match c {
        types::Content::Text(t) => {
            obj.insert("text".into(), json!(t.text));
            ("text", &t.annotations, &t.meta)
        }
        types::Content::Image(m) | types::Content::Audio(m) => {
            obj.insert("data".into(), json!(B64.encode(&m.data)));
            obj.insert("mimeType".into(), json!(m.mime_type));
            let kind = if matches!(c, types::Content::Image(_)) {
                "image"
            } else {
                "audio"
            };
            (kind, &m.annotations, &m.meta)
        }
        types::Content::ResourceLink(l) => {
            obj.insert("uri".into(), json!(l.uri));
            obj.insert("name".into(), json!(l.name));
            put_str(&mut obj, "title", &l.title);
            put_str(&mut obj, "description", &l.description);
            put_str(&mut obj, "mimeType", &l.mime_type);
            put(&mut obj, "size", l.size.map(|s| json!(s)));
            ("resource_link", &l.annotations, &l.meta)
        }
        types::Content::Embedded(e) => {
            obj.insert("resource".into(), resource_contents(&e.contents));
            ("resource", &e.annotations, &e.meta)
        }
    };
    obj.insert("type".into(), json!(kind));
    put(&mut obj, "annotations", annotations(ann));
    put_meta(&mut obj, meta);
    Value::Object(obj)
}

/// A tool as listed, under the name clients call it by, with its schemas
/// as parsed when its plugin loaded.
pub fn tool(entry: &ToolEntry, with_output_schema: bool) -> Value {
    let t = &entry.tool;
    let mut obj = Map::new();
    obj.insert("name".into(), json!(entry.name));
    put_str(&mut obj, "title", &t.title);
    put_str(&mut obj, "description", &t.description);
    obj.insert("inputSchema".into(), (*entry.input_schema).clone());
    if with_output_schema {
        put(
            &mut obj,
            "outputSchema",
            entry.output_schema.as_deref().cloned(),
        );
    }
    if let Some(a) = &t.annotations {
        let mut ann = Map::new();
        put_str(&mut ann, "title", &a.title);
        put(&mut ann, "readOnlyHint", a.read_only_hint.map(Value::Bool));
        put(
            &mut ann,
            "destructiveHint",
            a.destructive_hint.map(Value::Bool),
        );
        put(
            &mut ann,
            "idempotentHint",
            a.idempotent_hint.map(Value::Bool),
        );
        put(
            &mut ann,
            "openWorldHint",
            a.open_world_hint.map(Value::Bool),
        );
        obj.insert("annotations".into(), Value::Object(ann));
    }
    let support = match t.task_support {
        tools::TaskSupport::Forbidden => None,
        tools::TaskSupport::Optional => Some("optional"),
        tools::TaskSupport::Required => Some("required"),
    };
    put(
        &mut obj,
        "execution",
        support.map(|s| json!({ "taskSupport": s })),
    );
    put(&mut obj, "icons", icons(&t.icons));
    put_meta(&mut obj, &t.meta);
    Value::Object(obj)
}

/// A `CallToolResult`.
pub fn call_result(r: &tools::CallResult) -> Result<Value, String> {
    let mut obj = Map::new();
    obj.insert("content".into(), r.content.iter().map(content).collect());
    if let Some(structured) = &r.structured_content {
        obj.insert(
            "structuredContent".into(),
            plugin_json(structured, "structured-content")?,
        );
    }
    if r.is_error {
        obj.insert("isError".into(), Value::Bool(true));
    }
    put_meta(&mut obj, &r.meta);
    Ok(Value::Object(obj))
}

/// A tool error result the model can read.
pub fn tool_error(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// A `Resource` as listed.
pub fn resource(r: &resources::Resource) -> Value {
    let mut obj = Map::new();
    obj.insert("uri".into(), json!(r.uri));
    obj.insert("name".into(), json!(r.name));
    put_str(&mut obj, "title", &r.title);
    put_str(&mut obj, "description", &r.description);
    put_str(&mut obj, "mimeType", &r.mime_type);
    put(&mut obj, "size", r.size.map(|s| json!(s)));
    put(&mut obj, "annotations", annotations(&r.annotations));
    put(&mut obj, "icons", icons(&r.icons));
    put_meta(&mut obj, &r.meta);
    Value::Object(obj)
}

/// A `ResourceTemplate` as listed.
pub fn template(t: &resources::ResourceTemplate) -> Value {
    let mut obj = Map::new();
    obj.insert("uriTemplate".into(), json!(t.uri_template));
    obj.insert("name".into(), json!(t.name));
    put_str(&mut obj, "title", &t.title);
    put_str(&mut obj, "description", &t.description);
    put_str(&mut obj, "mimeType", &t.mime_type);
    put(&mut obj, "annotations", annotations(&t.annotations));
    put(&mut obj, "icons", icons(&t.icons));
    put_meta(&mut obj, &t.meta);
    Value::Object(obj)
}

/// A `Prompt` as listed, under the name clients get it by.
pub fn prompt(name: &str, p: &prompts::Prompt) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), json!(name));
    put_str(&mut obj, "title", &p.title);
    put_str(&mut obj, "description", &p.description);
    let args: Vec<Value> = p
        .arguments
        .iter()
        .map(|a| {
            let mut arg = Map::new();
            arg.insert("name".into(), json!(a.name));
            put_str(&mut arg, "title", &a.title);
            put_str(&mut arg, "description", &a.description);
            arg.insert("required".into(), Value::Bool(a.required));
            Value::Object(arg)
        })
        .collect();
    obj.insert("arguments".into(), Value::Array(args));
    put(&mut obj, "icons", icons(&p.icons));
    put_meta(&mut obj, &p.meta);
    Value::Object(obj)
}

/// A `GetPromptResult`.
pub fn prompt_result(r: &prompts::PromptResult) -> Value {
    let mut obj = Map::new();
    put_str(&mut obj, "description", &r.description);
    let messages: Vec<Value> = r
        .messages
        .iter()
        .map(|m| json!({ "role": role(m.role), "content": content(&m.content) }))
        .collect();
    obj.insert("messages".into(), Value::Array(messages));
    put_meta(&mut obj, &r.meta);
    Value::Object(obj)
}

/// The most completion values sent, as MCP requires.
pub const MAX_COMPLETIONS: usize = 100;

/// A `CompleteResult`.
pub fn completion(c: &completions::Completion) -> Value {
    let values: Vec<&String> = c.values.iter().take(MAX_COMPLETIONS).collect();
    let has_more = c.has_more || c.values.len() > MAX_COMPLETIONS;
    let mut completion = json!({ "values": values, "hasMore": has_more });
    if let Some(total) = c.total {
        completion["total"] = json!(total.max(values.len() as u32));
    }
    json!({ "completion": completion })
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
