//! {{name}}: a wasm-mcp plugin with a tool, a resource, a resource template,
//! a prompt and completions for it.

use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Introduce {
    /// Who is speaking.
    speaker: String,
    /// How many sentences (optional).
    sentences: Option<u32>,
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool("greet", "Says hello to someone", |g: Greet| {
            format!("Hello, {}!", g.name)
        })
        .resource(
            "plugin://{{name}}/about",
            "about",
            "text/plain",
            |_| Ok::<_, String>("{{name}} was made with wasm-mcp new.".to_owned()),
        )
        .template(
            "plugin://{{name}}/greeting/{who}",
            "greeting",
            "text/plain",
            |_, vars| Ok::<_, String>(format!("Hello, {}!", vars.get("who").unwrap_or_default())),
        )
        .prompt("introduce", "Asks for an introduction", |a: Introduce| {
            format!(
                "Introduce {} in {} sentences.",
                a.speaker,
                a.sentences.unwrap_or(2)
            )
        })
        .complete_prompt("introduce", "speaker", |typed, _| {
            ["Ada", "Alan", "Grace"]
                .into_iter()
                .filter(|name| name.starts_with(typed))
                .map(str::to_owned)
                .collect()
        })
}

export_plugin!(plugin);
