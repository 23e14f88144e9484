//! {{name}}: a wasm-mcp plugin with one tool, one resource and one prompt.

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
        .prompt("introduce", "Asks for an introduction", |a: Introduce| {
            format!(
                "Introduce {} in {} sentences.",
                a.speaker,
                a.sentences.unwrap_or(2)
            )
        })
}

export_plugin!(plugin);
