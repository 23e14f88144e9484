//! `completion/complete`.

use super::{server, unwrapped, Client, EVERY_REVISION};
use serde_json::{json, Value};

fn asked(reference: Value, value: &str) -> Value {
    json!({ "ref": reference, "argument": { "name": "id", "value": value } })
}

#[tokio::test]
async fn completions_come_from_the_plugin_for_prompts_and_templates() {
    let server = server().await;
    let prompt = json!({ "type": "ref/prompt", "name": "summarize" });
    let template = json!({ "type": "ref/resource", "uri": "notes://note/{id}" });
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for (reference, typed, values) in [
            (&prompt, "g", json!(["groceries"])),
            (&template, "i", json!(["ideas"])),
            (&template, "", json!(["groceries", "ideas", "todo"])),
            (&prompt, "x", json!([])),
        ] {
            let result = client
                .result("completion/complete", asked(reference.clone(), typed))
                .await;
            let result = unwrapped(revision, result, None);
            assert_eq!(
                result["completion"]["values"], values,
                "{revision} {reference} {typed:?}: {result}"
            );
            assert_ne!(result["completion"]["hasMore"], true, "{revision}");
        }
    }
}

#[tokio::test]
async fn a_completion_of_nothing_served_is_invalid_params() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for (params, says) in [
            (
                asked(json!({ "type": "ref/prompt", "name": "nope" }), ""),
                "Unknown prompt: nope",
            ),
            (
                asked(
                    json!({ "type": "ref/resource", "uri": "notes://x/{y}" }),
                    "",
                ),
                "Unknown resource template: notes://x/{y}",
            ),
            (
                asked(json!({ "type": "ref/other" }), ""),
                "\"ref.type\" must be \"ref/prompt\" or \"ref/resource\"",
            ),
            (
                json!({ "ref": { "type": "ref/prompt", "name": "summarize" } }),
                "argument",
            ),
            (json!({ "argument": { "name": "id", "value": "" } }), "ref"),
        ] {
            let (code, message) = client.error("completion/complete", params.clone()).await;
            assert_eq!(code, -32602, "{revision} {params}");
            assert!(message.contains(says), "{revision} {params}: {message}");
        }
    }
}
