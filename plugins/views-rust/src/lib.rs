//! A plugin with a view (MCP Apps), right or wrong as its granted
//! `VIEW_CASE` variable says: a test fixture for the host's checks of
//! views. Unset: `show` names the view `ui://views/panel`, and `poke` is
//! for the view only. `foreign`: `show` names another plugin's view;
//! `not-ui`: a URI that is not `ui://`; `wrong-type`: the view is plain
//! HTML; `bad-csp`: its policy would smuggle in a directive; `big`: the
//! view is `VIEW_KB` KiB.

use serde_json::json;
use wasm_mcp_sdk::prelude::*;

const VIEW: &str = "ui://views/panel";
const PANEL: &str = "<!doctype html><title>panel</title><p id=\"panel\">panel</p>";

fn case() -> String {
    std::env::var("VIEW_CASE").unwrap_or_default()
}

fn plugin() -> Plugin {
    let case = case();
    let named = match case.as_str() {
        "foreign" => "ui://filesystem/tree",
        "not-ui" => "https://example.com/panel",
        _ => VIEW,
    };
    let view = match case.as_str() {
        "wrong-type" => Resource::new(VIEW, "panel", |_| Ok::<_, String>(PANEL)).mime_type("text/html"),
        "bad-csp" => Resource::view(VIEW, "panel", PANEL)
            .ui(json!({ "csp": { "connectDomains": ["https://a.example; script-src *"] } })),
        "big" => {
            let kib: usize = std::env::var("VIEW_KB").ok().and_then(|k| k.parse().ok()).unwrap_or(1);
            Resource::view(VIEW, "panel", format!("{PANEL}{}", " ".repeat(kib << 10)))
        }
        _ => Resource::view(VIEW, "panel", PANEL)
            .ui(json!({ "csp": { "connectDomains": ["https://api.example.com"] }, "prefersBorder": true })),
    };
    Plugin::new()
        .add_resource(view)
        .add_tool(
            Tool::new("show", |()| "shown".to_owned())
                .description("Shows the panel.")
                .view(named),
        )
        .add_tool(
            Tool::new("poke", |()| "poked".to_owned())
                .description("Pokes the panel: for the view only.")
                .view_only(),
        )
}

export_plugin!(plugin);
