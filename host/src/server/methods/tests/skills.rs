//! The Skills extension: `skills/list`, `skills/get`,
//! `resources/directory/read`, and a skill's files through
//! `resources/read`, on every revision (the extension is offered on all).

use super::{error_of, list_caching, unwrapped, Client, EVERY_REVISION};
use crate::registry::tests::registry;
use crate::server::{Server, ServerOptions};
use serde_json::{json, Value};
use std::sync::Arc;

const SKILL: &str = "skill://hello/time-zones/SKILL.md";

/// A server over `hello` shipping the `time-zones` skill of
/// `dist/plugins/time.skills`.
async fn server() -> Arc<Server> {
    let registry = registry();
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/plugins");
    let bytes = tokio::fs::read(dist.join("hello.wasm")).await.unwrap();
    let source = crate::runtime::ComponentSource::new(bytes);
    let mut entry = registry
        .load("hello", source, crate::runtime::Grants::default(), true)
        .await
        .unwrap();
    let limits = crate::skills::Limits::default();
    let skills = crate::skills::read_folder(&dist.join("time.skills"), "hello", &limits);
    entry.skills = Arc::new(skills);
    registry.install(entry);
    Server::new(registry, ServerOptions::default())
}

fn uris(items: &Value) -> Vec<&str> {
    items
        .as_array()
        .expect("an array")
        .iter()
        .map(|i| i["uri"].as_str().expect("a uri"))
        .collect()
}

#[tokio::test]
async fn skills_are_listed_got_and_read_on_every_revision() {
    let server = server().await;
    let on_disk = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../dist/plugins/time.skills/time-zones/SKILL.md"),
    )
    .unwrap();
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let listed = client.result("skills/list", json!({})).await;
        let listed = unwrapped(revision, listed, list_caching());
        assert_eq!(uris(&listed["skills"]), [SKILL], "{revision}: {listed}");
        let skill = &listed["skills"][0];
        assert_eq!(skill["frontmatter"]["name"], "time-zones", "{revision}");
        assert_eq!(
            uris(&skill["resources"]),
            [SKILL, "skill://hello/time-zones/references/zones.md"],
            "{revision}"
        );
        assert_eq!(
            skill["resources"][0]["size"],
            on_disk.len(),
            "{revision}: {skill}"
        );

        let got = client.result("skills/get", json!({ "uri": SKILL })).await;
        let got = unwrapped(revision, got, list_caching());
        assert_eq!(got, json!({ "skill": skill }), "{revision}");

        let read = client
            .result("resources/read", json!({ "uri": SKILL }))
            .await;
        let read = unwrapped(revision, read, Some((0, "private")));
        assert_eq!(read["contents"][0]["uri"], SKILL, "{revision}");
        assert_eq!(read["contents"][0]["text"], on_disk.as_str(), "{revision}");

        let top = client
            .result(
                "resources/directory/read",
                json!({ "uri": "skill://hello/time-zones" }),
            )
            .await;
        let top = unwrapped(revision, top, None);
        assert_eq!(
            uris(&top["resources"]),
            [SKILL, "skill://hello/time-zones/references"],
            "{revision}: {top}"
        );
        assert_eq!(top["resources"][0]["name"], "time-zones", "{revision}");
        let plugin = client
            .result(
                "resources/directory/read",
                json!({ "uri": "skill://hello" }),
            )
            .await;
        assert_eq!(
            uris(&unwrapped(revision, plugin, None)["resources"]),
            ["skill://hello/time-zones"],
            "{revision}"
        );
    }
}

#[tokio::test]
async fn what_is_not_a_skill_is_invalid_params() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for (method, params, says) in [
            (
                "skills/get",
                json!({ "uri": "skill://hello/nope/SKILL.md" }),
                "No skill is served at skill://hello/nope/SKILL.md",
            ),
            ("skills/get", json!({}), "uri"),
            (
                "resources/directory/read",
                json!({ "uri": "skill://hello/time-zones/SKILL.md" }),
                "is not a directory resource",
            ),
            (
                "resources/directory/read",
                json!({ "uri": "notes://index" }),
                "is not a directory resource",
            ),
            ("skills/list", json!({ "cursor": "nonsense" }), "cursor"),
        ] {
            let response = client.request(method, params.clone()).await;
            let (code, message) = error_of(&response)
                .unwrap_or_else(|| panic!("{revision} {method} {params}: {response}"));
            assert_eq!(code, -32602, "{revision} {method} {params}");
            assert!(message.contains(says), "{revision} {method}: {message}");
        }
    }
}
