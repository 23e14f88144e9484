//! Server Cards (the `io.modelcontextprotocol/server-card` extension): a
//! card per endpoint at its URL then `/server-card`, and an AI Catalog
//! listing them at `/.well-known/ai-catalog.json` (and
//! `/.well-known/mcp/catalog.json`). Public, read-only metadata: served
//! without a token and to any origin, each built from the current
//! catalogue as it is asked for, with a strong `ETag` over its bytes.
//! Without authentication a card names what any caller may list there
//! (its plugins and tools); with it, only how to authenticate.

use super::guard::Guard;
use crate::protocol::Revision;
use crate::server::access::{Caller, Item, Profile};
use crate::server::Server;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The schema every card names (`$schema`).
pub const SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";

/// A card's media type.
pub const CARD_TYPE: &str = "application/mcp-server-card+json";

/// The AI Catalog's media type.
pub const CATALOG_TYPE: &str = "application/ai-catalog+json";

/// Where the AI Catalog is served: the extension's well-known path, and
/// the one MCP's own discovery names.
pub const CATALOG_PATHS: [&str; 2] = [
    "/.well-known/ai-catalog.json",
    "/.well-known/mcp/catalog.json",
];

/// How long a client may keep a card or the catalog without asking again:
/// short, since a reload changes what a card names.
const CACHE_CONTROL: &str = "public, max-age=300";

/// The `_meta` key of what an endpoint offers any caller (no auth).
const OFFERS: &str = "dev.wasm-mcp/offers";

/// The `_meta` key of how to authenticate (with auth).
const AUTHORIZATION: &str = "dev.wasm-mcp/authorization";

/// The path of the card of the endpoint at `path`.
pub fn card_path(path: &str) -> String {
    format!("{}/server-card", path.trim_end_matches('/'))
}

/// What the cards say of the host.
#[derive(Debug, Clone)]
pub struct CardOptions {
    /// The main endpoint's card name (`NAMESPACE/NAME`); a profile's adds
    /// `-PROFILE`.
    pub name: String,
    /// What the host offers, in 1 to 100 characters.
    pub description: String,
    /// A web page about it.
    pub website: Option<String>,
    /// Icons to show.
    pub icons: Vec<Icon>,
    /// The host's version (as `serverInfo` says).
    pub version: String,
    /// The main endpoint's public URL when the config names one (its
    /// `public_url`, or the authenticated resource's URL): the cards' URLs
    /// are made from it; without it, from the request's `Host`.
    pub public_url: Option<String>,
}

impl Default for CardOptions {
    fn default() -> Self {
        CardOptions {
            name: "local.wasm-mcp/wasm-mcp".into(),
            description: "Sandboxed WebAssembly plugins served over MCP".into(),
            website: None,
            icons: Vec::new(),
            version: env!("CARGO_PKG_VERSION").into(),
            public_url: None,
        }
    }
}

/// An icon of a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `https:` URL or a `data:` URI.
    pub src: String,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it fits (`48x48`, `any`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `light` or `dark`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<&'static str>,
}

/// One endpoint a card describes.
struct Endpoint {
    /// Its path.
    path: String,
    /// The profile it serves (`None`: the main endpoint).
    profile: Option<Arc<Profile>>,
}

/// What the card handlers share.
pub(super) struct Cards {
    server: Arc<Server>,
    guard: Guard,
    options: CardOptions,
    /// `https` with TLS, else `http`.
    scheme: &'static str,
    /// The RFC 9728 metadata's URL, when a token is required.
    metadata_url: Option<String>,
    /// The main endpoint first, then each profile's.
    endpoints: Vec<Endpoint>,
}

impl Cards {
    /// The cards of the main endpoint at `path` and of `profiles` (path,
    /// profile) of `server`; `metadata_url` when a token is required.
    pub(super) fn new(
        server: Arc<Server>,
        guard: Guard,
        options: CardOptions,
        tls: bool,
        metadata_url: Option<String>,
        path: &str,
        profiles: Vec<(String, Arc<Profile>)>,
    ) -> Self {
        let main = Endpoint {
            path: path.to_owned(),
            profile: None,
        };
        let profiles = profiles.into_iter().map(|(path, profile)| Endpoint {
            path,
            profile: Some(profile),
        });
        Cards {
            server,
            guard,
            options,
            scheme: if tls { "https" } else { "http" },
            metadata_url,
            endpoints: std::iter::once(main).chain(profiles).collect(),
        }
    }

    /// The routes of every card and of the catalog.
    pub(super) fn routes(self) -> Router {
        let cards = Arc::new(self);
        let mut router = Router::new();
        for (i, endpoint) in cards.endpoints.iter().enumerate() {
            let cards = cards.clone();
            let card = move |headers: HeaderMap| async move {
                // What it offers waits for the plugins' first load, as a
                // list does.
                if cards.metadata_url.is_none() {
                    cards.server.until_loaded().await;
                }
                cards.answer(&headers, CARD_TYPE, |host| cards.card(i, host))
            };
            router = router.route(&card_path(&endpoint.path), get(card).options(preflight));
        }
        for path in CATALOG_PATHS {
            let cards = cards.clone();
            let catalog = move |headers: HeaderMap| async move {
                cards.answer(&headers, CATALOG_TYPE, |host| cards.catalog(host))
            };
            router = router.route(path, get(catalog).options(preflight));
        }
        router
    }

    /// The document `make` builds for the request's host, as `media`,
    /// or 304 when the client holds it already; refused for a host the
    /// guard does not allow (any origin is).
    fn answer(
        &self,
        headers: &HeaderMap,
        media: &'static str,
        make: impl Fn(&str) -> Value,
    ) -> Response {
        let host = match self.guard.host(headers) {
            Ok(host) => host,
            Err((status, why)) => {
                tracing::warn!("refused a server card request: {why}");
                return with_cors((status, why).into_response());
            }
        };
        let body = serde_json::to_vec(&make(host)).unwrap_or_default();
        let tag = etag(&body);
        let cached = [
            (header::ETAG, tag.clone()),
            (header::CACHE_CONTROL, CACHE_CONTROL.to_owned()),
        ];
        let response = if none_match(headers, &tag) {
            (StatusCode::NOT_MODIFIED, cached).into_response()
        } else {
            (cached, [(header::CONTENT_TYPE, media)], body).into_response()
        };
        with_cors(response)
    }

    /// The public URL of the main endpoint's origin and the prefix a
    /// proxy puts before the host's paths (from the configured URL, else
    /// the request's `host`).
    fn base(&self, host: &str) -> (String, String) {
        let configured = self
            .options
            .public_url
            .as_deref()
            .and_then(|url| url::Url::parse(url).ok());
        let Some(url) = configured else {
            return (format!("{}://{host}", self.scheme), String::new());
        };
        let origin = url.origin().ascii_serialization();
        let main = self.endpoints[0].path.trim_end_matches('/');
        let path = url.path().trim_end_matches('/');
        let prefix = path.strip_suffix(main).unwrap_or_default();
        (origin, prefix.to_owned())
    }

    /// The public URL of endpoint `i`.
    fn endpoint_url(&self, i: usize, host: &str) -> String {
        if let (0, Some(url)) = (i, &self.options.public_url) {
            return url.clone();
        }
        let (origin, prefix) = self.base(host);
        format!("{origin}{prefix}{}", self.endpoints[i].path)
    }

    /// The public URL of endpoint `i`'s card.
    fn card_url(&self, i: usize, host: &str) -> String {
        card_path(&self.endpoint_url(i, host))
    }

    /// Endpoint `i`'s card name.
    fn name(&self, i: usize) -> String {
        match &self.endpoints[i].profile {
            None => self.options.name.clone(),
            Some(profile) => format!("{}-{}", self.options.name, profile.name),
        }
    }

    /// The card of endpoint `i`, reached at `host`.
    fn card(&self, i: usize, host: &str) -> Value {
        let endpoint = &self.endpoints[i];
        let name = self.name(i);
        let short = name.split_once('/').map_or(name.as_str(), |(_, n)| n);
        let title = match &endpoint.profile {
            None => short.to_owned(),
            Some(profile) => {
                let server = self.options.name.split_once('/').map_or("", |(_, n)| n);
                format!("{server} (profile {})", profile.name)
            }
        };
        let versions: Vec<Revision> = Revision::newest_first()
            .filter(|r| self.server.offers_stateless() || !r.is_stateless())
            .collect();
        let mut remote = json!({
            "type": "streamable-http",
            "url": self.endpoint_url(i, host),
            "supportedProtocolVersions": versions,
        });
        let mut meta = Map::new();
        match &self.metadata_url {
            Some(metadata) => {
                remote["headers"] = json!([{
                    "name": "Authorization",
                    "description": "Bearer TOKEN: a token from an authorization server \
                                    the protected-resource metadata names",
                    "isRequired": true,
                    "isSecret": true,
                }]);
                meta.insert(
                    AUTHORIZATION.into(),
                    json!({ "resourceMetadata": metadata }),
                );
            }
            None => {
                meta.insert(OFFERS.into(), self.offers(endpoint.profile.as_ref()));
            }
        }
        let mut card = json!({
            "$schema": SCHEMA,
            "name": name,
            "version": self.options.version,
            "description": self.options.description,
            "title": crate::text::head(&title, 100),
            "remotes": [remote],
            "_meta": meta,
        });
        if let Some(website) = &self.options.website {
            card["websiteUrl"] = json!(website);
        }
        if !self.options.icons.is_empty() {
            card["icons"] = json!(self.options.icons);
        }
        card
    }

    /// The plugins and tools (sorted) a caller without a token may list
    /// on an endpoint serving `profile` (every tool it may call, with tool
    /// search too).
    fn offers(&self, profile: Option<&Arc<Profile>>) -> Value {
        let catalogue = self.server.registry().catalogue();
        let mut caller = (*Caller::anonymous()).clone();
        if let Some(profile) = profile {
            caller = caller.in_profile(profile.clone());
        }
        let policy = self.server.policy();
        let sees = |item: &Item<'_>| policy.check(&caller, item, "").is_ok();
        let mut plugins = BTreeSet::new();
        let mut tools = BTreeSet::new();
        // A tool for its view only (MCP Apps) is listed to no one.
        for entry in catalogue.tools.iter().filter(|t| t.for_model) {
            if sees(&Item::tool(entry.plugin.name(), &entry.tool)) {
                tools.insert(entry.name.as_str());
                plugins.insert(entry.plugin.name());
            }
        }
        for entry in &catalogue.prompts {
            if sees(&Item::prompt(entry.plugin.name(), &entry.prompt.name)) {
                plugins.insert(entry.plugin.name());
            }
        }
        for entry in &catalogue.resources {
            let plugin = entry.plugin.name();
            let item = match &entry.skill_file {
                Some((skill, _)) => Item::skill(plugin, skill),
                None => Item::resource(plugin, &entry.resource.uri),
            };
            if sees(&item) {
                plugins.insert(plugin);
            }
        }
        for entry in &catalogue.templates {
            let plugin = entry.plugin.name();
            if sees(&Item::resource(plugin, &entry.template.uri_template)) {
                plugins.insert(plugin);
            }
        }
        json!({ "plugins": plugins, "tools": tools })
    }

    /// The AI Catalog: an entry per endpoint's card, reached at `host`.
    fn catalog(&self, host: &str) -> Value {
        let entries: Vec<Value> = (0..self.endpoints.len())
            .map(|i| {
                json!({
                    "identifier": identifier(&self.name(i)),
                    "type": CARD_TYPE,
                    "url": self.card_url(i, host),
                })
            })
            .collect();
        json!({ "specVersion": "1.0", "entries": entries })
    }
}

/// The catalog identifier of card `name` (`com.example/weather`):
/// `urn:air:example.com:mcp:weather` (its namespace as a domain).
fn identifier(name: &str) -> String {
    let (namespace, server) = name.split_once('/').unwrap_or(("", name));
    let publisher: Vec<&str> = namespace.split('.').rev().collect();
    format!("urn:air:{}:mcp:{server}", publisher.join("."))
}

/// A strong entity tag of `body`: 128 bits of its SHA-256, quoted.
fn etag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether the request's `If-None-Match` names `tag` (compared weakly, as
/// RFC 9110 has it for GET) or is `*`.
fn none_match(headers: &HeaderMap, tag: &str) -> bool {
    let opaque = tag.trim_matches('"');
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|list| names_tag(list, opaque))
}

/// Whether `list` (`*`, or entity tags separated by commas) names the
/// tag whose opaque part is `opaque`.
fn names_tag(list: &str, opaque: &str) -> bool {
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return false;
        }
        if rest.starts_with('*') {
            return true;
        }
        let tag = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(inner) = tag.strip_prefix('"') else {
            return false;
        };
        let Some(end) = inner.find('"') else {
            return false;
        };
        if &inner[..end] == opaque {
            return true;
        }
        rest = &inner[end + 1..];
    }
}

/// `response` with the CORS headers of public, read-only metadata.
fn with_cors(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        (header::ACCESS_CONTROL_ALLOW_METHODS, "GET"),
        (
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            "Content-Type, If-None-Match",
        ),
        (header::ACCESS_CONTROL_EXPOSE_HEADERS, "ETag"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// A browser's preflight: what it may ask, for a day.
async fn preflight() -> Response {
    let mut response = with_cors(StatusCode::NO_CONTENT.into_response());
    response.headers_mut().insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    response
}

#[cfg(test)]
mod tests;
