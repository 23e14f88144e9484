//! Example resources, templates, prompts and completions: a tiny notebook.

use wasm_mcp_sdk::prelude::*;

const NOTES: &[(&str, &str)] = &[
    ("groceries", "milk, eggs, bread"),
    ("ideas", "a wasm host for MCP tools"),
    ("todo", "write the README"),
];

fn note(id: &str) -> Option<&'static str> {
    NOTES
        .iter()
        .find(|(name, _)| *name == id)
        .map(|(_, body)| *body)
}

#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// The id of the note to summarize.
    id: String,
    /// The style of the summary, such as "short" or "detailed".
    style: Option<String>,
}

fn summarize(args: Summarize) -> Result<Vec<PromptMessage>, String> {
    let body = note(&args.id).ok_or_else(|| format!("no note named {}", args.id))?;
    let style = args.style.unwrap_or_else(|| "short".into());
    Ok(vec![
        user(format!("Write a {style} summary of this note:\n\n{body}")),
        assistant("Sure, here is the summary:"),
    ])
}

fn starting_with(prefix: &str) -> Vec<String> {
    NOTES
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| id.starts_with(prefix))
        .map(String::from)
        .collect()
}

fn plugin() -> Plugin {
    Plugin::new()
        .resource("notes://index", "index", "text/plain", |_| {
            Ok::<_, String>(
                NOTES
                    .iter()
                    .map(|(id, _)| *id)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
        .template("notes://note/{id}", "note", "text/plain", |_, vars| {
            let id = vars.get("id").unwrap_or_default();
            note(id).ok_or_else(|| format!("no note named {id}"))
        })
        .prompt("summarize", "Asks the model to summarize a note", summarize)
        .complete_prompt("summarize", "id", |typed, _| starting_with(typed))
        .complete_template("notes://note/{id}", "id", |typed, _| starting_with(typed))
}

export_plugin!(plugin);
