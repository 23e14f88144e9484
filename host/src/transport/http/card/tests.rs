//! The cards and the catalog as the router serves them (a tower
//! `oneshot`, no socket), over a server of the example plugins `hello`
//! (the tools `greet`, `add`, `countdown`) and `notes` (a resource, a
//! template and a prompt).

use super::*;
use crate::config::Config;
use crate::registry::tests::{entry, registry};
use crate::server::{Policy, ServerOptions};
use crate::transport::http::{router, Auth, HttpOptions};
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;

/// A server over `hello` and `notes` as `config` (TOML) sets access.
async fn server(config: &str, handshake_only: bool) -> (Arc<Server>, Config) {
    let config = Config::parse(config, std::path::Path::new(".")).unwrap();
    let registry = registry();
    for name in ["hello", "notes"] {
        registry.install(entry(&registry, name, name).await);
    }
    let options = ServerOptions {
        access: Arc::new(Policy::of(&config)),
        handshake_only,
        ..ServerOptions::default()
    };
    (Server::new(registry, options), config)
}

/// The endpoint's options for `config`'s profiles.
fn options(config: &Config) -> HttpOptions {
    HttpOptions {
        profile_paths: config
            .profiles
            .keys()
            .map(|name| {
                (
                    crate::config::serving::profile_path(config, name),
                    name.clone(),
                )
            })
            .collect(),
        ..HttpOptions::default()
    }
}

/// GETs `path` of `app` with `headers` (a loopback Host unless given).
async fn get(
    app: &Router,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = Request::get(path);
    if !headers.iter().any(|(name, _)| *name == "host") {
        request = request.header("host", "127.0.0.1:8080");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes().to_vec();
    (parts.status, parts.headers, bytes)
}

/// The JSON document at `path`, checked to be served as `media`.
async fn document(app: &Router, path: &str, media: &str) -> Value {
    let (status, headers, body) = get(app, path, &[]).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{path}: {}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(headers[header::CONTENT_TYPE], media);
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn a_default_card_names_the_host_its_endpoint_and_what_anyone_may_list() {
    let (server, config) = server("", false).await;
    let (app, _) = router(server, options(&config));
    let card = document(&app, "/mcp/server-card", CARD_TYPE).await;
    assert_eq!(
        card,
        json!({
            "$schema": SCHEMA,
            "name": "local.wasm-mcp/wasm-mcp",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sandboxed WebAssembly plugins served over MCP",
            "title": "wasm-mcp",
            "remotes": [{
                "type": "streamable-http",
                "url": "http://127.0.0.1:8080/mcp",
                "supportedProtocolVersions":
                    ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
            }],
            "_meta": { "dev.wasm-mcp/offers": {
                "plugins": ["hello", "notes"],
                "tools": ["add", "countdown", "greet"],
            } },
        })
    );
    // The same card, as the body a reader gets: public, short-lived,
    // readable from any page, and tagged by its bytes.
    let (_, headers, body) = get(&app, "/mcp/server-card", &[]).await;
    assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=300");
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    assert_eq!(headers[header::ACCESS_CONTROL_EXPOSE_HEADERS], "ETag");
    assert_eq!(headers[header::ETAG], etag(&body).as_str());
    assert!(card_path("/mcp") == crate::config::card::card_path("/mcp"));
}

#[tokio::test]
async fn a_client_holding_the_tag_is_told_not_modified() {
    let (server, config) = server("", false).await;
    let (app, _) = router(server, options(&config));
    let (_, headers, _) = get(&app, "/mcp/server-card", &[]).await;
    let tag = headers[header::ETAG].to_str().unwrap().to_owned();
    assert!(
        tag.starts_with('"') && tag.ends_with('"') && tag.len() == 34,
        "{tag}"
    );
    let weak = format!("W/{tag}");
    let listed = format!("\"other\", {tag}");
    for held in [tag.as_str(), weak.as_str(), listed.as_str(), "*"] {
        let (status, headers, body) =
            get(&app, "/mcp/server-card", &[("if-none-match", held)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{held}");
        assert_eq!(headers[header::ETAG], tag.as_str());
        assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=300");
        assert!(body.is_empty());
    }
    for stale in [
        "\"other\"",
        "W/\"other\", \"older\"",
        "garbage",
        "\"unclosed",
    ] {
        let (status, ..) = get(&app, "/mcp/server-card", &[("if-none-match", stale)]).await;
        assert_eq!(status, StatusCode::OK, "{stale}");
    }
}

#[tokio::test]
async fn each_profile_has_a_card_of_its_own_and_the_catalog_lists_them_all() {
    let (server, config) = server(
        "[profiles.greeter]\ninclude = [\"hello.greet\"]\n\
         [profiles.notes]\npath = \"/notes-only\"\ninclude = [\"notes.*\"]\n",
        false,
    )
    .await;
    let (app, _) = router(server, options(&config));
    let greeter = document(&app, "/mcp/greeter/server-card", CARD_TYPE).await;
    assert_eq!(greeter["name"], "local.wasm-mcp/wasm-mcp-greeter");
    assert_eq!(greeter["title"], "wasm-mcp (profile greeter)");
    assert_eq!(
        greeter["remotes"][0]["url"],
        "http://127.0.0.1:8080/mcp/greeter"
    );
    assert_eq!(
        greeter["_meta"][OFFERS],
        json!({ "plugins": ["hello"], "tools": ["greet"] })
    );
    let notes = document(&app, "/notes-only/server-card", CARD_TYPE).await;
    assert_eq!(notes["name"], "local.wasm-mcp/wasm-mcp-notes");
    assert_eq!(
        notes["remotes"][0]["url"],
        "http://127.0.0.1:8080/notes-only"
    );
    assert_eq!(
        notes["_meta"][OFFERS],
        json!({ "plugins": ["notes"], "tools": [] })
    );
    let (_, first, _) = get(&app, "/mcp/server-card", &[]).await;
    let (_, second, _) = get(&app, "/mcp/greeter/server-card", &[]).await;
    assert_ne!(first[header::ETAG], second[header::ETAG]);
    for path in CATALOG_PATHS {
        let catalog = document(&app, path, CATALOG_TYPE).await;
        let entry = |name: &str, url: &str| {
            json!({ "identifier": format!("urn:air:wasm-mcp.local:mcp:{name}"),
                    "type": CARD_TYPE, "url": format!("http://127.0.0.1:8080{url}") })
        };
        assert_eq!(
            catalog,
            json!({ "specVersion": "1.0", "entries": [
                entry("wasm-mcp", "/mcp/server-card"),
                entry("wasm-mcp-greeter", "/mcp/greeter/server-card"),
                entry("wasm-mcp-notes", "/notes-only/server-card"),
            ] })
        );
    }
}

#[tokio::test]
async fn what_needs_a_scope_is_left_out_and_a_handshake_only_host_says_so() {
    let (server, config) = server(
        "[plugins.hello]\n[plugins.notes]\nscopes = [\"notes:read\"]\n",
        true,
    )
    .await;
    let (app, _) = router(server, options(&config));
    let card = document(&app, "/mcp/server-card", CARD_TYPE).await;
    assert_eq!(card["_meta"][OFFERS]["plugins"], json!(["hello"]));
    assert_eq!(
        card["remotes"][0]["supportedProtocolVersions"],
        json!(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
    );
}

#[tokio::test]
async fn under_auth_a_card_says_how_to_authenticate_and_nothing_more() {
    let (server, config) = server("[profiles.greeter]\ninclude = [\"hello.greet\"]\n", false).await;
    let resource = "https://mcp.example.com/api/mcp";
    let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp";
    let auth = Auth::new(&["s3cret".into()], None, resource, metadata.into(), &[]);
    let options = HttpOptions {
        auth: Some(auth),
        guard: Guard {
            loopback: false,
            allowed_hosts: vec!["mcp.example.com".into()],
            allowed_origins: Vec::new(),
        },
        card: CardOptions {
            name: "com.example/tools".into(),
            website: Some("https://example.com".into()),
            icons: vec![Icon {
                src: "https://example.com/icon.png".into(),
                mime_type: Some("image/png".into()),
                sizes: vec!["48x48".into()],
                theme: Some("dark"),
            }],
            public_url: Some(resource.into()),
            ..CardOptions::default()
        },
        ..options(&config)
    };
    let (app, _) = router(server, options);
    // No token, and a page of another origin: served all the same, while
    // the endpoint itself refuses both.
    let host = [
        ("host", "mcp.example.com"),
        ("origin", "https://elsewhere.example"),
    ];
    let (status, _, body) = get(&app, "/mcp/server-card", &host).await;
    assert_eq!(status, StatusCode::OK);
    let card: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(card["name"], "com.example/tools");
    assert_eq!(card["title"], "tools");
    assert_eq!(card["websiteUrl"], "https://example.com");
    assert_eq!(
        card["icons"],
        json!([{ "src": "https://example.com/icon.png", "mimeType": "image/png",
                 "sizes": ["48x48"], "theme": "dark" }])
    );
    let remote = &card["remotes"][0];
    assert_eq!(remote["url"], resource);
    assert_eq!(remote["headers"][0]["name"], "Authorization");
    assert_eq!(remote["headers"][0]["isRequired"], true);
    assert_eq!(remote["headers"][0]["isSecret"], true);
    assert_eq!(
        card["_meta"],
        json!({ AUTHORIZATION: { "resourceMetadata": metadata } })
    );
    let (status, _, body) = get(&app, "/mcp/greeter/server-card", &host).await;
    assert_eq!(status, StatusCode::OK);
    let greeter: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(greeter["name"], "com.example/tools-greeter");
    assert_eq!(
        greeter["remotes"][0]["url"],
        "https://mcp.example.com/api/mcp/greeter"
    );
    assert!(greeter["_meta"].get(OFFERS).is_none());
    let (_, _, body) = get(&app, "/.well-known/ai-catalog.json", &host).await;
    let catalog: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        catalog["entries"][1],
        json!({ "identifier": "urn:air:example.com:mcp:tools-greeter", "type": CARD_TYPE,
                "url": "https://mcp.example.com/api/mcp/greeter/server-card" })
    );
    let (status, ..) = get(&app, "/mcp", &host).await;
    assert_ne!(status, StatusCode::OK);
    // A host the guard does not allow is refused (with CORS headers, so a
    // page can tell).
    let (status, headers, _) = get(&app, "/mcp/server-card", &[("host", "evil.example")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
}

#[tokio::test]
async fn a_browser_may_ask_with_a_tag_from_any_origin() {
    let (server, config) = server("", false).await;
    let options = HttpOptions {
        guard: Guard {
            loopback: true,
            allowed_hosts: Vec::new(),
            allowed_origins: vec!["http://localhost:5173".into()],
        },
        ..options(&config)
    };
    let (app, _) = router(server, options);
    let request = Request::options("/mcp/server-card")
        .header("host", "127.0.0.1:8080")
        .header("origin", "https://elsewhere.example")
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "if-none-match")
        .body(Body::empty())
        .unwrap();
    let answer = app.clone().oneshot(request).await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let headers = answer.headers();
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_METHODS], "GET");
    assert_eq!(
        headers[header::ACCESS_CONTROL_ALLOW_HEADERS],
        "Content-Type, If-None-Match"
    );
    let (status, headers, _) = get(
        &app,
        "/mcp/server-card",
        &[("origin", "https://elsewhere.example")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
}

#[test]
fn identifiers_turn_the_namespace_into_a_domain() {
    assert_eq!(
        identifier("com.example/weather"),
        "urn:air:example.com:mcp:weather"
    );
    assert_eq!(
        identifier("local.wasm-mcp/wasm-mcp-read"),
        "urn:air:wasm-mcp.local:mcp:wasm-mcp-read"
    );
    assert!(names_tag(" , W/\"a\" ,\"b\"", "b"));
    assert!(!names_tag("\"a\"", "b") && !names_tag("", "b") && !names_tag("b", "b"));
}
