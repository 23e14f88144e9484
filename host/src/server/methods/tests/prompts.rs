//! `prompts/list` and `prompts/get`.

use super::{list_caching, server, unwrapped, Client, EVERY_REVISION};
use serde_json::json;

#[tokio::test]
async fn prompts_list_shows_the_prompt_and_its_arguments() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let result = client.result("prompts/list", json!({})).await;
        let result = unwrapped(revision, result, list_caching());
        let prompts = result["prompts"].as_array().expect("an array");
        assert_eq!(prompts.len(), 1, "{revision}: {result}");
        let prompt = &prompts[0];
        assert_eq!(prompt["name"], "summarize", "{revision}");
        assert_eq!(
            prompt["description"], "Asks the model to summarize a note",
            "{revision}"
        );
        let arguments: Vec<_> = prompt["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["name"].clone(), a["required"].clone()))
            .collect();
        assert_eq!(
            arguments,
            [(json!("id"), json!(true)), (json!("style"), json!(false))],
            "{revision}: {prompt}"
        );
        assert!(result.get("nextCursor").is_none(), "{revision}");
    }
}

#[tokio::test]
async fn prompts_get_renders_the_messages() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let params =
            json!({ "name": "summarize", "arguments": { "id": "groceries", "style": "terse" } });
        let result = unwrapped(revision, client.result("prompts/get", params).await, None);
        assert_eq!(
            result["messages"],
            json!([
                { "role": "user", "content": { "type": "text", "text": "Write a terse summary of this note:\n\nmilk, eggs, bread" } },
                { "role": "assistant", "content": { "type": "text", "text": "Sure, here is the summary:" } },
            ]),
            "{revision}: {result}"
        );
    }
}

#[tokio::test]
async fn prompts_get_refuses_missing_and_wrong_arguments() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for (params, code, says) in [
            (
                json!({ "name": "summarize" }),
                -32602,
                "Missing required argument(s) for prompt summarize: id",
            ),
            (
                json!({ "name": "summarize", "arguments": { "style": "long" } }),
                -32602,
                "Missing required argument(s) for prompt summarize: id",
            ),
            (
                json!({ "name": "summarize", "arguments": { "id": 3 } }),
                -32602,
                "prompt argument \"id\" must be a string",
            ),
            (
                json!({ "name": "summarize", "arguments": ["groceries"] }),
                -32602,
                "\"arguments\" must be an object",
            ),
            (json!({ "name": "nope" }), -32602, "Unknown prompt: nope"),
            (json!({}), -32602, "name"),
            // The plugin's own refusal (an internal error from the example).
            (
                json!({ "name": "summarize", "arguments": { "id": "zzz" } }),
                -32603,
                "no note named zzz",
            ),
        ] {
            let (got, message) = client.error("prompts/get", params.clone()).await;
            assert_eq!(got, code, "{revision} {params}: {message}");
            assert!(message.contains(says), "{revision} {params}: {message}");
        }
    }
}
