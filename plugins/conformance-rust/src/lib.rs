//! Conformance fixture: every tool, resource, template and prompt the
//! official MCP conformance suite's server scenarios call, with the exact
//! contents they check. Served only when the conformance fixtures are
//! loaded (scripts/conformance), never by default.

use std::thread::sleep;
use std::time::Duration;
use wasm_mcp_sdk::host::{Answer, ElicitationAction, ElicitationResponse, InputError, Question};
use wasm_mcp_sdk::prelude::*;
use wasm_mcp_sdk::serde_json::{json, Value};

/// A 1x1 PNG.
const PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 252, 207, 192, 240, 31, 0,
    5, 5, 2, 0, 95, 200, 241, 210, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A WAV file of 8 silent 8-bit samples at 8 kHz.
fn wav() -> Vec<u8> {
    let samples = [128u8; 8];
    let mut w = Vec::new();
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&8u16.to_le_bytes());
    w.extend_from_slice(b"data");
    w.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    w.extend_from_slice(&samples);
    w
}

fn pause() {
    sleep(Duration::from_millis(50));
}

fn logging() -> &'static str {
    host::info("Tool execution started");
    pause();
    host::info("Tool processing data");
    pause();
    host::info("Tool execution completed");
    "Logging tool completed"
}

fn progress() -> &'static str {
    for (step, n) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            pause();
        }
        host::progress(n, Some(100.0), None);
    }
    "Progress tool completed"
}

fn describe(answer: Result<ElicitationResponse, InputError>) -> Result<String, String> {
    let answer = answer.map_err(|e| format!("elicitation failed: {e:?}"))?;
    let action = match answer.action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        ElicitationAction::Cancel => "cancel",
    };
    let content = answer.content.unwrap_or_else(|| "{}".into());
    Ok(format!("action={action}, content={content}"))
}

#[derive(Deserialize, JsonSchema)]
struct Sampling {
    /// The prompt to send to the LLM.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct Elicitation {
    /// The message to show the user.
    message: String,
}

fn sampling(args: Sampling) -> Result<String, String> {
    let reply =
        host::sample_text(&args.prompt, 100).map_err(|e| format!("sampling failed: {e:?}"))?;
    let text = match reply.content {
        Content::Text(t) => t.text,
        _ => "(non-text content)".into(),
    };
    Ok(format!("LLM response: {text}"))
}

fn elicitation(args: Elicitation) -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" }
        },
        "required": ["username", "email"]
    });
    describe(host::elicit_form(&args.message, &schema)).map(|d| format!("User response: {d}"))
}

fn elicitation_defaults() -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        }
    });
    describe(host::elicit_form("Please review the defaults", &schema))
        .map(|d| format!("Elicitation completed: {d}"))
}

fn elicitation_enums() -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "oneOf": [
                { "const": "value1", "title": "First Option" },
                { "const": "value2", "title": "Second Option" },
                { "const": "value3", "title": "Third Option" }
            ] },
            "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"] },
            "untitledMulti": { "type": "array",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "items": { "anyOf": [
                { "const": "value1", "title": "First Choice" },
                { "const": "value2", "title": "Second Choice" },
                { "const": "value3", "title": "Third Choice" }
            ] } }
        }
    });
    describe(host::elicit_form("Please choose", &schema))
        .map(|d| format!("Elicitation completed: {d}"))
}

/// The schema the json-schema-2020-12 scenario expects preserved verbatim.
fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": { "address": { "$anchor": "addressDef", "type": "object",
            "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

#[derive(Deserialize, JsonSchema)]
struct Query {
    region: String,
    query: String,
}

#[derive(Deserialize, JsonSchema)]
struct WithArguments {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

#[derive(Deserialize, JsonSchema)]
struct WithResource {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

/// A one-field form.
fn field(message: &str, name: &str, kind: &str) -> Question {
    host::form(
        message,
        &json!({ "type": "object", "properties": { name: { "type": kind } }, "required": [name] }),
    )
}

/// The value of `name` in an accepted form.
fn form_value(answer: &Result<Answer, InputError>, name: &str) -> Result<Value, String> {
    match answer {
        Ok(Answer::Elicit(ElicitationResponse {
            action: ElicitationAction::Accept,
            content: Some(content),
        })) => {
            let content: Value = wasm_mcp_sdk::serde_json::from_str(content)
                .map_err(|e| format!("unreadable form: {e}"))?;
            Ok(content.get(name).cloned().unwrap_or(Value::Null))
        }
        Ok(_) => Err("the user did not accept".into()),
        Err(e) => Err(format!("no answer: {e:?}")),
    }
}

fn sampled_text(answer: &Result<Answer, InputError>) -> Result<String, String> {
    match answer {
        Ok(Answer::Sample(reply)) => match &reply.content {
            Content::Text(t) => Ok(t.text.clone()),
            _ => Ok("(non-text content)".into()),
        },
        Ok(_) => Err("an unexpected answer".into()),
        Err(e) => Err(format!("no answer: {e:?}")),
    }
}

fn root_uris(answer: &Result<Answer, InputError>) -> Result<String, String> {
    match answer {
        Ok(Answer::Roots(roots)) => Ok(roots
            .iter()
            .map(|r| r.uri.as_str())
            .collect::<Vec<_>>()
            .join(", ")),
        Ok(_) => Err("an unexpected answer".into()),
        Err(e) => Err(format!("no answer: {e:?}")),
    }
}

fn one(question: (&str, Question)) -> Result<Answer, InputError> {
    host::ask(vec![question]).remove(0)
}

/// Asks the user to confirm, under the key `confirm`.
fn confirm() -> Result<Value, String> {
    form_value(
        &one(("confirm", field("Please confirm", "ok", "boolean"))),
        "ok",
    )
}

/// The input-required (2026-07-28) fixtures: each question has the key the
/// suite expects.
fn input_required(plugin: Plugin) -> Plugin {
    plugin
        .tool(
            "test_input_required_result_elicitation",
            "Asks the user's name",
            |(): ()| -> Result<String, String> {
                let name = form_value(
                    &one(("user_name", field("What is your name?", "name", "string"))),
                    "name",
                )?;
                Ok(format!("Hello, {}!", name.as_str().unwrap_or_default()))
            },
        )
        .tool(
            "test_input_required_result_sampling",
            "Asks the client's model a question",
            |(): ()| -> Result<String, String> {
                let answer = one((
                    "capital_question",
                    host::sampling("What is the capital of France?", 100),
                ));
                Ok(format!("The model says: {}", sampled_text(&answer)?))
            },
        )
        .tool(
            "test_input_required_result_list_roots",
            "Asks for the client's roots",
            |(): ()| -> Result<String, String> {
                Ok(format!(
                    "Roots: {}",
                    root_uris(&one(("client_roots", Question::Roots)))?
                ))
            },
        )
        .tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation, carrying request state",
            |(): ()| confirm().map(|ok| format!("state-ok: confirmed={ok}")),
        )
        .tool(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation, carrying request state",
            |(): ()| confirm().map(|ok| format!("confirmed={ok}")),
        )
        .tool(
            "test_input_required_result_multiple_inputs",
            "Asks the user, the model and for the roots at once",
            |(): ()| -> Result<String, String> {
                let answers = host::ask(vec![
                    ("user_name", field("What is your name?", "name", "string")),
                    ("greeting", host::sampling("Generate a greeting", 50)),
                    ("client_roots", Question::Roots),
                ]);
                let name = form_value(&answers[0], "name")?;
                Ok(format!(
                    "name={} greeting={} roots={}",
                    name.as_str().unwrap_or_default(),
                    sampled_text(&answers[1])?,
                    root_uris(&answers[2])?
                ))
            },
        )
        .tool(
            "test_input_required_result_multi_round",
            "Asks two questions, one after the other",
            |(): ()| -> Result<String, String> {
                let name = form_value(
                    &one((
                        "step1",
                        field("Step 1: What is your name?", "name", "string"),
                    )),
                    "name",
                )?;
                let color = form_value(
                    &one((
                        "step2",
                        field("Step 2: What is your favorite color?", "color", "string"),
                    )),
                    "color",
                )?;
                Ok(format!(
                    "{} likes {}",
                    name.as_str().unwrap_or_default(),
                    color.as_str().unwrap_or_default()
                ))
            },
        )
        .tool(
            "test_input_required_result_capabilities",
            "Asks the user and the model; only what the client supports is asked",
            |(): ()| -> Result<String, String> {
                let answers = host::ask(vec![
                    ("user_name", field("What is your name?", "name", "string")),
                    ("greeting", host::sampling("Generate a greeting", 50)),
                ]);
                let name = form_value(&answers[0], "name").unwrap_or(Value::Null);
                let greeting = sampled_text(&answers[1]).unwrap_or_default();
                Ok(format!("name={name} greeting={greeting}"))
            },
        )
        .prompt(
            "test_input_required_result_prompt",
            "A prompt that asks the user for context",
            |(): ()| -> Result<Vec<PromptMessage>, String> {
                let question = field("What context should the prompt use?", "context", "string");
                let context = form_value(&one(("user_context", question)), "context")?;
                Ok(vec![user(format!(
                    "Use this context: {}",
                    context.as_str().unwrap_or_default()
                ))])
            },
        )
}

fn tools(plugin: Plugin) -> Plugin {
    plugin
        .tool(
            "test_simple_text",
            "Returns simple text content",
            |(): ()| "This is a simple text response for testing.",
        )
        .tool("test_image_content", "Returns an image", |(): ()| {
            image(PNG.to_vec(), "image/png")
        })
        .tool("test_audio_content", "Returns an audio clip", |(): ()| {
            audio(wav(), "audio/wav")
        })
        .tool(
            "test_embedded_resource",
            "Returns an embedded resource",
            |(): ()| {
                embedded(ResourceContents::text(
                    "test://embedded-resource",
                    Some("text/plain"),
                    "This is an embedded resource content.",
                ))
            },
        )
        .tool(
            "test_multiple_content_types",
            "Returns text, an image and an embedded resource",
            |(): ()| {
                vec![
                    text("Multiple content types test:"),
                    image(PNG.to_vec(), "image/png"),
                    embedded(ResourceContents::text(
                        "test://mixed-content-resource",
                        Some("application/json"),
                        r#"{"test":"data","value":123}"#,
                    )),
                ]
            },
        )
        .tool(
            "test_tool_with_logging",
            "Logs three messages while it runs",
            |(): ()| logging(),
        )
        .tool(
            "test_logging_tool",
            "Logs three messages while it runs",
            |(): ()| logging(),
        )
        .tool(
            "test_error_handling",
            "Always fails",
            |(): ()| -> Result<String, &str> {
                Err("This tool intentionally returns an error for testing")
            },
        )
        .tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
            |(): ()| progress(),
        )
        .tool(
            "test_reconnection",
            "Runs briefly, reporting progress",
            |(): ()| progress(),
        )
        .tool("test_sampling", "Asks the client's model", sampling)
        .tool("test_elicitation", "Asks the user", elicitation)
        .tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user, with defaults for every primitive type",
            |(): ()| elicitation_defaults(),
        )
        .tool(
            "test_elicitation_sep1330_enums",
            "Asks the user, with every kind of enum",
            |(): ()| elicitation_enums(),
        )
        .tool(
            "test_url_elicitation",
            "Sends the user to a URL and reports what they did",
            |(): ()| {
                describe(host::elicit_url(
                    "Please sign in",
                    "https://example.com/sign-in",
                ))
            },
        )
        .tool(
            "test_missing_capability",
            "Needs the client's sampling capability",
            |(): ()| {
                sampling(Sampling {
                    prompt: "Say hello".into(),
                })
            },
        )
        .tool(
            "test_streaming_elicitation",
            "Asks the user while it runs",
            |(): ()| {
                elicitation(Elicitation {
                    message: "Please answer".into(),
                })
            },
        )
        .add_tool(
            Tool::new("json_schema_2020_12_tool", |_: Value| "ok")
                .description("Has an input schema with JSON Schema 2020-12 keywords")
                .input_schema(schema_2020_12()),
        )
        .add_tool(
            Tool::new("test_custom_headers", |q: Query| {
                format!("region={} query={}", q.region, q.query)
            })
            .description("Mirrors its region argument into the Mcp-Param-Region header")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region",
                        "description": "The region to run the query in" },
                    "query": { "type": "string", "description": "The query" }
                },
                "required": ["region", "query"]
            })),
        )
}

fn resources(plugin: Plugin) -> Plugin {
    plugin
        .add_resource(
            Resource::new("test://static-text", "static-text", |_| {
                Ok::<_, String>("This is the content of the static text resource.")
            })
            .mime_type("text/plain")
            .description("A static text resource"),
        )
        .add_resource(
            Resource::new("test://static-binary", "static-binary", |_| {
                Ok::<_, String>(PNG.to_vec())
            })
            .mime_type("image/png")
            .description("A static binary resource (a PNG image)"),
        )
        .add_resource(
            Resource::new("test://watched-resource", "watched-resource", |_| {
                Ok::<_, String>("A resource to subscribe to.")
            })
            .mime_type("text/plain")
            .description("A resource clients may subscribe to"),
        )
        .add_template(
            Template::new("test://template/{id}/data", "template-data", |_, vars| {
                let id = vars.get("id").unwrap_or_default();
                Ok::<_, String>(
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                        .to_string(),
                )
            })
            .mime_type("application/json")
            .description("Data for an id"),
        )
}

#[derive(Deserialize, JsonSchema)]
struct Typed {
    /// How many times to say it.
    times: Option<u32>,
    /// Whether to shout.
    loud: bool,
}

fn prompts(plugin: Plugin) -> Plugin {
    plugin
        .prompt(
            "test_simple_prompt",
            "A simple prompt without arguments",
            |(): ()| "This is a simple prompt for testing.",
        )
        .prompt(
            "test_prompt_with_arguments",
            "A prompt with two required arguments",
            |a: WithArguments| {
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    a.arg1, a.arg2
                )
            },
        )
        .prompt(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds a resource",
            |a: WithResource| {
                vec![
                    user(embedded(ResourceContents::text(
                        a.resource_uri,
                        Some("text/plain"),
                        "Embedded resource content for testing.",
                    ))),
                    user("Please process the embedded resource above."),
                ]
            },
        )
        .prompt(
            "typed_prompt",
            "A prompt whose arguments are not all strings",
            |a: Typed| {
                let word = if a.loud { "HEY" } else { "hey" };
                vec![word; a.times.unwrap_or(1) as usize].join(" ")
            },
        )
        .prompt(
            "test_prompt_with_image",
            "A prompt with an image",
            |(): ()| {
                vec![
                    user(image(PNG.to_vec(), "image/png")),
                    user("Please analyze the image above."),
                ]
            },
        )
        .complete_prompt("test_prompt_with_arguments", "arg1", |typed, _| {
            ["paris", "park", "party"]
                .into_iter()
                .filter(|v| v.starts_with(typed))
                .map(String::from)
                .collect()
        })
}

#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowCompute {
    /// How long to work, in seconds.
    seconds: f64,
    /// A label for the result.
    label: Option<String>,
    /// Whether to ask to go on as a task at once (default: yes); if not,
    /// the host decides.
    detach: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
struct ConfirmDelete {
    /// The file to delete.
    filename: String,
}

/// Works for `seconds`, reporting progress every quarter second and
/// stopping early when cancelled.
fn work(seconds: f64) {
    let seconds = seconds.clamp(0.0, 3600.0);
    let start = std::time::Instant::now();
    let mut reported = 0.0;
    while start.elapsed().as_secs_f64() < seconds && !host::is_cancelled() {
        // A short job is not rounded up to a whole step.
        let left = seconds - start.elapsed().as_secs_f64();
        sleep(Duration::from_secs_f64(left.clamp(0.0, 0.05)));
        let done = start.elapsed().as_secs_f64().min(seconds);
        if done - reported >= 0.25 {
            host::progress(done, Some(seconds), None);
            reported = done;
        }
    }
}

/// The tasks extension's fixtures (2026-07-28) and the 2025-11-25 task
/// tools.
fn tasks(plugin: Plugin) -> Plugin {
    plugin
        .tool("greet", "Greets someone (never a task)", |args: Greet| {
            format!("Hello, {}!", args.name)
        })
        .add_tool(
            Tool::new("slow_compute", |args: SlowCompute| {
                if args.seconds > 0.0 && args.detach != Some(false) {
                    host::continue_as_task();
                }
                work(args.seconds);
                format!(
                    "Computed {} in {}s",
                    args.label.as_deref().unwrap_or("a result"),
                    args.seconds
                )
            })
            .description("Works for `seconds` seconds, as a task when it can")
            .task_support(TaskSupport::Optional),
        )
        .add_tool(
            Tool::new("idempotent_compute", |args: SlowCompute| {
                host::continue_as_task();
                work(args.seconds);
                format!(
                    "Computed {} in {}s",
                    args.label.as_deref().unwrap_or("a result"),
                    args.seconds
                )
            })
            .description("Works for `seconds` seconds as a task; running it again does no harm")
            .idempotent()
            .task_support(TaskSupport::Optional),
        )
        .add_tool(
            Tool::new("failing_job", |(): ()| -> Result<String, &str> {
                work(1.0);
                Err("The job failed after a second of work")
            })
            .description("Works for a second, then reports a tool error; only runs as a task")
            .task_support(TaskSupport::Required),
        )
        .add_tool(
            Tool::new("protocol_error_job", |(): ()| -> String {
                host::continue_as_task();
                work(0.2);
                panic!("protocol_error_job crashes on purpose")
            })
            .description("Crashes (a protocol-level failure), as a task when it can")
            .task_support(TaskSupport::Optional),
        )
        .add_tool(
            Tool::new("confirm_delete", |args: ConfirmDelete| {
                host::continue_as_task();
                let confirmed = form_value(
                    &one((
                        "confirm_delete",
                        field(
                            &format!("Delete {}?", args.filename),
                            "confirm",
                            "boolean",
                        ),
                    )),
                    "confirm",
                );
                match confirmed {
                    Ok(Value::Bool(true)) => format!("Deleted {}", args.filename),
                    _ => format!("Kept {}", args.filename),
                }
            })
            .description("Asks before it deletes a file, as a task when it can")
            .task_support(TaskSupport::Optional),
        )
        .add_tool(
            Tool::new("multi_input", |(): ()| -> Result<String, String> {
                host::continue_as_task();
                let form = json!({
                    "type": "object",
                    "properties": { "name": { "type": "string" }, "confirm": { "type": "boolean" } },
                    "required": ["name"]
                });
                let answers = host::ask(vec![
                    ("first", host::form("First input", &form)),
                    ("second", host::form("Second input", &form)),
                ]);
                let first = form_value(&answers[0], "name")?;
                let second = form_value(&answers[1], "name")?;
                Ok(format!("Got {first} and {second}"))
            })
            .description("Asks two questions at once, as a task when it can")
            .task_support(TaskSupport::Optional),
        )
        .add_tool(
            Tool::new("test_tool_with_task", |(): ()| -> Result<String, String> {
                let name = form_value(
                    &one(("user_name", field("What is your name?", "name", "string"))),
                    "name",
                )?;
                host::continue_as_task();
                work(0.5);
                Ok(format!("Hello, {}!", name.as_str().unwrap_or_default()))
            })
            .description("Asks a name first, then goes on as a task; only runs as a task")
            .task_support(TaskSupport::Required),
        )
}

fn plugin() -> Plugin {
    tasks(input_required(prompts(resources(tools(Plugin::new())))))
}

export_plugin!(plugin);
