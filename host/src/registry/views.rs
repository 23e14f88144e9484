//! MCP Apps views (the `io.modelcontextprotocol/ui` extension): what a
//! plugin's tools and resources say of their views, checked before the
//! plugin is served, and what a read of a view may pass on.
//!
//! A tool names its view with `_meta.ui.resourceUri` (or the older flat
//! `_meta["ui/resourceUri"]`): a `ui://` resource the same plugin lists,
//! of type [`MIME_TYPE`]. `_meta.ui.visibility` says who may see the tool:
//! `["app"]` is for the view alone, not listed to the model. A view's own
//! `_meta.ui` (its content security policy, the permissions it asks for)
//! is passed on verbatim only when well-formed.

use crate::runtime::{resources, tools, Listing};
use anyhow::{bail, ensure, Context, Result};
use serde_json::{Map, Value};

pub use crate::protocol::meta::UI_MIME_TYPE as MIME_TYPE;
/// The scheme of a view's URI.
pub const SCHEME: &str = "ui://";
/// The flat key older clients read a tool's view from.
const FLAT_RESOURCE_URI: &str = "ui/resourceUri";
/// The longest view URI.
const MAX_URI_BYTES: usize = 2048;
/// The most `_meta.ui` of one tool or view may hold, as JSON.
const MAX_UI_BYTES: usize = 16 << 10;
/// Origins one directive of a view's content security policy may list.
const MAX_ORIGINS: usize = 64;
/// The longest origin in a content security policy.
const MAX_ORIGIN_BYTES: usize = 512;

/// The content security policy's directives, as the extension names them.
const CSP_KEYS: [&str; 4] = [
    "connectDomains",
    "resourceDomains",
    "frameDomains",
    "baseUriDomains",
];
/// The permissions a view may ask for.
const PERMISSIONS: [&str; 4] = ["camera", "microphone", "geolocation", "clipboardWrite"];

/// Whether MIME type `mime` is a view's (parameters compared without
/// spaces or case).
pub fn is_view_type(mime: &str) -> bool {
    let plain: String = mime
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    plain == MIME_TYPE
}

/// The `_meta` object of `meta` (JSON text), if it is one.
fn object(meta: &Option<String>) -> Option<Map<String, Value>> {
    match serde_json::from_str(meta.as_deref()?) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Whether the tool whose `_meta` is `meta` is shown to the model: true
/// unless its `ui.visibility` leaves `"model"` out.
pub fn for_model(meta: &Option<String>) -> bool {
    let Some(meta) = object(meta) else {
        return true;
    };
    match meta.get("ui").and_then(|ui| ui.get("visibility")) {
        Some(Value::Array(who)) => who.iter().any(|w| w == "model"),
        _ => true,
    }
}

/// The view a tool whose `_meta` is `meta` names, if any.
pub fn view_of(meta: &Option<String>) -> Option<String> {
    let meta = object(meta)?;
    let nested = meta.get("ui").and_then(|ui| ui.get("resourceUri"));
    nested
        .or_else(|| meta.get(FLAT_RESOURCE_URI))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// `meta` without the view it names (its other `_meta`, visibility
/// included, kept).
pub fn without_view(meta: &Option<String>) -> Option<String> {
    let mut meta = object(meta)?;
    meta.remove(FLAT_RESOURCE_URI);
    if let Some(Value::Object(ui)) = meta.get_mut("ui") {
        ui.remove("resourceUri");
    }
    Some(Value::Object(meta).to_string())
}

/// Checks what `listing`'s tools and resources say of views: an error
/// naming the tool or resource and what is wrong refuses the plugin.
pub fn check(listing: &Listing) -> Result<()> {
    for tool in &listing.tools {
        check_tool(tool, &listing.resources)
            .with_context(|| format!("tool {}: its view (_meta.ui)", tool.name))?;
    }
    for resource in &listing.resources {
        if let Some(ui) = object(&resource.meta).and_then(|m| m.get("ui").cloned()) {
            check_view_meta(&ui)
                .with_context(|| format!("resource {}: its _meta.ui", resource.uri))?;
        }
    }
    Ok(())
}

fn check_tool(tool: &tools::Tool, resources: &[resources::Resource]) -> Result<()> {
    let Some(meta) = object(&tool.meta) else {
        return Ok(());
    };
    let ui = match meta.get("ui") {
        None => None,
        Some(Value::Object(ui)) => Some(ui),
        Some(_) => bail!("_meta.ui is not an object"),
    };
    if let Some(ui) = ui {
        ensure!(
            Value::Object(ui.clone()).to_string().len() <= MAX_UI_BYTES,
            "_meta.ui is over {} KiB",
            MAX_UI_BYTES >> 10
        );
    }
    let nested = ui.and_then(|ui| ui.get("resourceUri"));
    let flat = meta.get(FLAT_RESOURCE_URI);
    for uri in [nested, flat].into_iter().flatten() {
        check_resource_uri(uri, resources)?;
    }
    if let (Some(nested), Some(flat)) = (nested, flat) {
        ensure!(
            nested == flat,
            "_meta.ui.resourceUri ({nested}) and _meta[\"{FLAT_RESOURCE_URI}\"] ({flat}) differ"
        );
    }
    if let Some(visibility) = ui.and_then(|ui| ui.get("visibility")) {
        check_visibility(visibility)?;
    }
    Ok(())
}

/// A tool's view URI: a `ui://` URI of a view the plugin itself lists.
fn check_resource_uri(uri: &Value, resources: &[resources::Resource]) -> Result<()> {
    let Value::String(uri) = uri else {
        bail!("resourceUri is not a string");
    };
    ensure!(
        uri.len() <= MAX_URI_BYTES,
        "resourceUri is over {MAX_URI_BYTES} bytes"
    );
    let shown = crate::text::head(uri, 200);
    ensure!(
        uri.starts_with(SCHEME),
        "resourceUri {shown} is not a {SCHEME} URI"
    );
    let Some(view) = resources.iter().find(|r| &r.uri == uri) else {
        bail!(
            "resourceUri {shown} names no resource this plugin lists (a view is a {SCHEME} \
             resource of the tool's own plugin)"
        );
    };
    match &view.mime_type {
        Some(mime) if is_view_type(mime) => Ok(()),
        Some(mime) => bail!(
            "resourceUri {shown} names a resource of type {}, not {MIME_TYPE}",
            crate::text::head(mime, 100)
        ),
        None => bail!(
            "resourceUri {shown} names a resource with no MIME type (a view's is {MIME_TYPE})"
        ),
    }
}

fn check_visibility(visibility: &Value) -> Result<()> {
    let Value::Array(who) = visibility else {
        bail!("visibility is not a list");
    };
    ensure!(
        !who.is_empty(),
        "visibility is empty: no one could see the tool"
    );
    for (i, w) in who.iter().enumerate() {
        ensure!(
            w == "model" || w == "app",
            "visibility holds {}, not \"model\" or \"app\"",
            crate::text::head(&w.to_string(), 60)
        );
        ensure!(!who[..i].contains(w), "visibility names {w} twice");
    }
    Ok(())
}

/// A view's `_meta.ui`: its content security policy and permissions
/// well-formed, its other known keys of the right type.
pub fn check_view_meta(ui: &Value) -> Result<()> {
    let Value::Object(ui) = ui else {
        bail!("not an object");
    };
    ensure!(
        Value::Object(ui.clone()).to_string().len() <= MAX_UI_BYTES,
        "over {} KiB",
        MAX_UI_BYTES >> 10
    );
    if let Some(csp) = ui.get("csp") {
        let Value::Object(csp) = csp else {
            bail!("csp is not an object");
        };
        for (key, origins) in csp {
            ensure!(
                CSP_KEYS.contains(&key.as_str()),
                "csp.{} is not one of {}",
                crate::text::head(key, 60),
                CSP_KEYS.join(", ")
            );
            let Value::Array(origins) = origins else {
                bail!("csp.{key} is not a list");
            };
            ensure!(
                origins.len() <= MAX_ORIGINS,
                "csp.{key} lists over {MAX_ORIGINS} origins"
            );
            for origin in origins {
                let Value::String(origin) = origin else {
                    bail!("csp.{key} holds {origin}, not a string");
                };
                ensure!(
                    is_origin(origin),
                    "csp.{key} holds {:?}, not an origin such as https://api.example.com \
                     or https://*.example.com",
                    crate::text::head(origin, 100)
                );
            }
        }
    }
    if let Some(permissions) = ui.get("permissions") {
        let Value::Object(permissions) = permissions else {
            bail!("permissions is not an object");
        };
        for (key, value) in permissions {
            ensure!(
                PERMISSIONS.contains(&key.as_str()),
                "permissions.{} is not one of {}",
                crate::text::head(key, 60),
                PERMISSIONS.join(", ")
            );
            ensure!(
                value.as_object().is_some_and(Map::is_empty),
                "permissions.{key} is not {{}}"
            );
        }
    }
    if let Some(domain) = ui.get("domain") {
        ensure!(
            domain
                .as_str()
                .is_some_and(|d| !d.is_empty() && d.len() <= MAX_ORIGIN_BYTES && is_plain(d)),
            "domain is not a plain name or origin"
        );
    }
    if let Some(border) = ui.get("prefersBorder") {
        ensure!(border.is_boolean(), "prefersBorder is not true or false");
    }
    Ok(())
}

/// Whether `text` holds nothing that could end or extend a policy
/// directive (whitespace, `;`, `,`, quotes) or any other odd character.
fn is_plain(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b".-_:/*%~[]".contains(&b))
}

/// Whether `origin` is a content security policy origin:
/// `scheme://host[:port][/path]`, the host a name, an IPv4 address or a
/// bracketed IPv6 one, optionally starting `*.`; the port digits or `*`.
fn is_origin(origin: &str) -> bool {
    if origin.is_empty() || origin.len() > MAX_ORIGIN_BYTES || !is_plain(origin) {
        return false;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_lowercase())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+.-".contains(&b));
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !authority.ends_with(']') => (host, Some(port)),
        _ => (authority, None),
    };
    let port_ok = port.is_none_or(|p| p == "*" || (p.len() <= 5 && p.parse::<u16>().is_ok()));
    let host_ok = if let Some(v6) = host.strip_prefix('[') {
        v6.strip_suffix(']')
            .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok())
    } else {
        let name = host.strip_prefix("*.").unwrap_or(host);
        !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    };
    let path_ok = !path.contains('*') && !path.contains("..");
    scheme_ok && host_ok && port_ok && path_ok
}

/// Checks the contents a read of plugin `plugin` returned: a view (a
/// `ui://` URI or the view type) over `max_bytes` is refused, saying so;
/// a view's `_meta.ui` is passed on only when well-formed
/// ([`contents_meta`]).
pub fn check_read(
    plugin: &str,
    max_bytes: usize,
    contents: &mut [crate::runtime::types::ResourceContents],
) -> std::result::Result<(), String> {
    use crate::runtime::types::ResourceBody;
    for c in contents {
        let is_view = c.uri.starts_with(SCHEME) || c.mime_type.as_deref().is_some_and(is_view_type);
        if !is_view {
            continue;
        }
        let size = match &c.body {
            ResourceBody::Text(text) => text.len(),
            ResourceBody::Blob(bytes) => bytes.len(),
        };
        if size > max_bytes {
            tracing::warn!(
                plugin,
                uri = crate::text::head(&c.uri, 200),
                size,
                "a view over the limit"
            );
            return Err(format!(
                "the view {} is {} KiB, over this plugin's limit of {} KiB (max_view_kb)",
                crate::text::head(&c.uri, 200),
                size.div_ceil(1024),
                max_bytes >> 10
            ));
        }
        contents_meta(plugin, &c.uri, &mut c.meta);
    }
    Ok(())
}

/// `_meta` of a view's contents as read, with its `ui` left out (and
/// logged) when it is not well-formed: the client then applies its own,
/// strictest policy.
pub fn contents_meta(plugin: &str, uri: &str, meta: &mut Option<String>) {
    let Some(mut map) = object(meta) else {
        return;
    };
    let Some(ui) = map.get("ui") else {
        return;
    };
    if let Err(e) = check_view_meta(ui) {
        tracing::warn!(
            plugin,
            uri = crate::text::head(uri, 200),
            "a view's _meta.ui is left out: {e:#}"
        );
        map.remove("ui");
        *meta = Some(Value::Object(map).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(meta: Value) -> tools::Tool {
        tools::Tool {
            name: "show".into(),
            title: None,
            description: None,
            input_schema: "{\"type\":\"object\"}".into(),
            output_schema: None,
            annotations: None,
            task_support: tools::TaskSupport::Forbidden,
            icons: Vec::new(),
            meta: Some(meta.to_string()),
        }
    }

    fn view(uri: &str, mime: Option<&str>, meta: Option<Value>) -> resources::Resource {
        resources::Resource {
            uri: uri.into(),
            name: "view".into(),
            title: None,
            description: None,
            mime_type: mime.map(Into::into),
            size: None,
            annotations: None,
            icons: Vec::new(),
            meta: meta.map(|m| m.to_string()),
        }
    }

    fn listing(tools: Vec<tools::Tool>, resources: Vec<resources::Resource>) -> Listing {
        Listing {
            tools,
            resources,
            templates: Vec::new(),
            prompts: Vec::new(),
        }
    }

    fn refusal(tool_meta: Value, resources: Vec<resources::Resource>) -> String {
        format!(
            "{:#}",
            check(&listing(vec![tool(tool_meta)], resources)).unwrap_err()
        )
    }

    #[test]
    fn a_tool_names_a_view_of_its_own_plugin() {
        let views = || vec![view("ui://files/tree", Some(MIME_TYPE), None)];
        let ok = json!({ "ui": { "resourceUri": "ui://files/tree", "visibility": ["app"] } });
        check(&listing(vec![tool(ok)], views())).unwrap();
        let flat = json!({ "ui/resourceUri": "ui://files/tree" });
        check(&listing(vec![tool(flat)], views())).unwrap();

        let other = refusal(
            json!({ "ui": { "resourceUri": "ui://other/view" } }),
            views(),
        );
        assert!(
            other.contains("names no resource this plugin lists"),
            "{other}"
        );
        let http = refusal(
            json!({ "ui": { "resourceUri": "https://x/view" } }),
            views(),
        );
        assert!(http.contains("is not a ui:// URI"), "{http}");
        let number = refusal(json!({ "ui": { "resourceUri": 7 } }), views());
        assert!(number.contains("not a string"), "{number}");
        let differ = refusal(
            json!({ "ui": { "resourceUri": "ui://files/tree" }, "ui/resourceUri": "ui://x" }),
            views(),
        );
        assert!(differ.contains("names no resource"), "{differ}");
        let text = vec![view("ui://files/tree", Some("text/html"), None)];
        let typed = refusal(json!({ "ui": { "resourceUri": "ui://files/tree" } }), text);
        assert!(typed.contains("not text/html;profile=mcp-app"), "{typed}");
        assert!(typed.starts_with("tool show: its view"), "{typed}");
    }

    #[test]
    fn a_view_is_found_and_taken_off() {
        let meta = Some(
            json!({ "ui": { "resourceUri": "ui://a", "visibility": ["app"] }, "k": 1 }).to_string(),
        );
        assert_eq!(view_of(&meta).as_deref(), Some("ui://a"));
        let flat = Some(json!({ "ui/resourceUri": "ui://b" }).to_string());
        assert_eq!(view_of(&flat).as_deref(), Some("ui://b"));
        let off = without_view(&meta);
        assert_eq!(view_of(&off), None);
        assert_eq!(
            off.unwrap(),
            json!({ "ui": { "visibility": ["app"] }, "k": 1 }).to_string()
        );
        assert_eq!(view_of(&without_view(&flat)), None);
        assert_eq!(view_of(&None), None);
    }

    #[test]
    fn visibility_is_model_or_app_once_each() {
        let views = || vec![view("ui://v", Some("text/html; profile=mcp-app"), None)];
        for bad in [
            json!([]),
            json!(["user"]),
            json!("app"),
            json!(["app", "app"]),
        ] {
            let why = refusal(
                json!({ "ui": { "resourceUri": "ui://v", "visibility": bad } }),
                views(),
            );
            assert!(why.contains("visibility"), "{why}");
        }
        assert!(!for_model(&Some(
            json!({"ui": {"visibility": ["app"]}}).to_string()
        )));
        assert!(for_model(&Some(
            json!({"ui": {"visibility": ["app", "model"]}}).to_string()
        )));
        assert!(for_model(&Some(json!({"ui": {}}).to_string())));
        assert!(for_model(&None));
    }

    #[test]
    fn a_view_policy_passes_only_when_well_formed() {
        let good = json!({
            "csp": { "connectDomains": ["https://api.example.com", "wss://*.example.com:443"],
                     "resourceDomains": ["https://cdn.example.com/lib", "http://127.0.0.1:8080", "http://[::1]:3000"] },
            "permissions": { "clipboardWrite": {} },
            "domain": "abc.example.com",
            "prefersBorder": true
        });
        check_view_meta(&good).unwrap();
        for bad in [
            json!({ "csp": { "connectDomains": ["https://a.com; script-src *"] } }),
            json!({ "csp": { "connectDomains": ["'unsafe-inline'"] } }),
            json!({ "csp": { "connectDomains": ["https://a.com 'self'"] } }),
            json!({ "csp": { "connectDomains": ["*"] } }),
            json!({ "csp": { "connectDomains": ["https://"] } }),
            json!({ "csp": { "connectDomains": ["https://a..com"] } }),
            json!({ "csp": { "connectDomains": ["https://a.com:99999"] } }),
            json!({ "csp": { "scriptDomains": ["https://a.com"] } }),
            json!({ "csp": { "connectDomains": "https://a.com" } }),
            json!({ "permissions": { "camera": true } }),
            json!({ "permissions": { "usb": {} } }),
            json!({ "domain": "a.com;x" }),
            json!({ "prefersBorder": "yes" }),
        ] {
            assert!(check_view_meta(&bad).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..65)
            .map(|i| format!("https://h{i}.example.com"))
            .collect();
        assert!(check_view_meta(&json!({ "csp": { "connectDomains": many } })).is_err());
    }

    #[test]
    fn a_malformed_view_policy_is_left_out_of_what_is_read() {
        let mut meta =
            Some(json!({ "ui": { "csp": { "connectDomains": ["x y"] } }, "k": 1 }).to_string());
        contents_meta("p", "ui://v", &mut meta);
        assert_eq!(meta.as_deref(), Some("{\"k\":1}"));
        let kept = json!({ "ui": { "csp": { "connectDomains": ["https://a.com"] } } }).to_string();
        let mut meta = Some(kept.clone());
        contents_meta("p", "ui://v", &mut meta);
        assert_eq!(meta, Some(kept));
    }

    #[test]
    fn a_listed_view_with_a_malformed_policy_refuses_the_plugin() {
        let bad = view(
            "ui://v",
            Some(MIME_TYPE),
            Some(json!({ "ui": { "csp": { "connectDomains": [1] } } })),
        );
        let why = format!("{:#}", check(&listing(Vec::new(), vec![bad])).unwrap_err());
        assert!(why.starts_with("resource ui://v: its _meta.ui"), "{why}");
    }
}
