//! Streamable HTTP (axum): one MCP endpoint for every revision (sessions
//! for the handshake revisions, none for the stateless one), the
//! deprecated HTTP+SSE transport behind a flag, the server cards, and
//! what keeps the endpoint safe to expose: Host/Origin checks, bearer
//! authentication, a body limit and configurable CORS.

mod answer;
mod auth;
pub mod card;
mod endpoint;
mod event_log;
mod guard;
pub mod headers;
mod legacy_sse;
mod listener;
pub mod ops;
mod replay;
mod responses;
mod sessions;
#[cfg(test)]
mod tests;
pub mod tls;

pub use auth::{check_jwks_url, Auth, JwksSource, JwtCheck, Location, Reason};
pub use card::{CardOptions, Icon};
pub use guard::Guard;
pub use listener::ConnectionLimits;
pub use sessions::SessionLimits;

use crate::server::access::TextClaim;
use crate::server::{Caller, Server, ServerEvent};
use auth::Denied;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use legacy_sse::LegacyConnection;
use parking_lot::Mutex;
use sessions::SessionTable;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// How long a lost stream may be resumed before its request is cancelled,
/// by default.
pub const DEFAULT_RESUME_GRACE: Duration = Duration::from_secs(30);

/// How the HTTP endpoint behaves.
pub struct HttpOptions {
    /// The MCP endpoint's path.
    pub path: String,
    /// Answer every request with JSON, never SSE.
    pub json_response: bool,
    /// Also serve the deprecated HTTP+SSE transport (`/sse`, `/messages`).
    pub legacy_sse: bool,
    /// Which Host and Origin headers are accepted.
    pub guard: Guard,
    /// Bearer authentication, if required.
    pub auth: Option<Auth>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Sessions idle this long are ended.
    pub session_idle: Duration,
    /// How long a session's request goes on after its stream was lost
    /// before it is cancelled (the client may resume the stream meanwhile).
    pub resume_grace: Duration,
    /// Sessions open at once.
    pub sessions: SessionLimits,
    /// Connections open at once, and their deadlines.
    pub connections: ConnectionLimits,
    /// On SIGTERM, how long the requests and tasks in progress may go on
    /// before the host exits (`None`: it exits at once). A replica drains;
    /// a host on its own does not.
    pub drain: Option<Duration>,
    /// Serve HTTPS with this certificate and key (`None`: plain HTTP).
    pub tls: Option<tls::TlsFiles>,
    /// The `[profiles]` and their paths: path, profile name.
    pub profile_paths: Vec<(String, String)>,
    /// The token claim naming the profile a caller is served on the main
    /// path.
    pub profile_claim: Option<String>,
    /// The token claim naming a caller's tenant (`[tenancy] claim`); a
    /// token without it is refused. `None`: its `sub`.
    pub tenant_claim: Option<String>,
    /// What the server cards say.
    pub card: CardOptions,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            json_response: false,
            legacy_sse: false,
            guard: Guard {
                loopback: true,
                ..Guard::default()
            },
            auth: None,
            max_body_bytes: 4 << 20,
            session_idle: Duration::from_secs(30 * 60),
            resume_grace: DEFAULT_RESUME_GRACE,
            sessions: SessionLimits::default(),
            connections: ConnectionLimits::default(),
            drain: None,
            profile_paths: Vec::new(),
            profile_claim: None,
            tenant_claim: None,
            tls: None,
            card: CardOptions::default(),
        }
    }
}

/// What every HTTP handler shares.
pub struct App {
    server: Arc<Server>,
    sessions: Arc<SessionTable>,
    legacy: Mutex<HashMap<String, LegacyConnection>>,
    json_response: bool,
    resume_grace: Duration,
    guard: Guard,
    auth: Option<Auth>,
    profile_claim: Option<String>,
    tenant_claim: Option<String>,
}

impl App {
    /// Checks Host/Origin and the bearer token; who the request acts for
    /// (anonymous without authentication), or the refusal to send.
    async fn admit(&self, headers: &HeaderMap) -> Result<Arc<Caller>, Box<Response>> {
        if let Err((status, why)) = self.guard.check(headers) {
            tracing::warn!("refused a request: {why}");
            let what = if status == StatusCode::FORBIDDEN {
                "Forbidden"
            } else {
                "Bad request"
            };
            return Err(Box::new(responses::rpc_error(
                status,
                crate::protocol::RpcError::new(
                    crate::protocol::ErrorCode::InvalidRequest,
                    format!("{what}: {why}"),
                ),
                &serde_json::Value::Null,
            )));
        }
        match &self.auth {
            None => Ok(Caller::anonymous()),
            Some(auth) => auth
                .authenticate(headers)
                .await
                .map(|caller| self.profiled(caller))
                .and_then(|caller| self.tenanted(caller).map(Arc::new))
                .map_err(|denied| {
                    crate::metrics::metrics().refused(crate::metrics::Refusal::Unauthenticated);
                    crate::server::refusals::note(&crate::server::refusals::Refusal {
                        reason: denied.reason.code(),
                        message: denied.reason.description(),
                        detail: denied.detail.as_deref(),
                        principal: denied.principal.as_deref(),
                        client: listener::peer(),
                    });
                    if let Some(audit) = self.server.audit() {
                        audit.record(&crate::server::audit::Entry {
                            event: "refused",
                            principal: denied.principal.as_deref(),
                            outcome: "unauthenticated",
                            reason: Some(denied.reason.description()),
                            ..Default::default()
                        });
                    }
                    Box::new(auth.challenge(&denied))
                }),
        }
    }

    /// `caller` as a member of the tenant its token's `[tenancy] claim`
    /// names; refused when the token has no such claim, or one that is
    /// not a non-empty string.
    fn tenanted(&self, caller: Caller) -> Result<Caller, Denied> {
        let Some(claim) = &self.tenant_claim else {
            return Ok(caller);
        };
        let tenant = match caller.claim_at(claim) {
            TextClaim::Text(name) => crate::tenant::Tenant::new(name),
            TextClaim::Absent | TextClaim::NotText => None,
        };
        match tenant {
            Some(tenant) => Ok(caller.in_tenant(tenant)),
            None => Err(Denied {
                principal: caller.principal.clone(),
                ..Denied::new(
                    Reason::NoTenant,
                    Some(format!(
                        "the token's {} claim, which names its tenant ([tenancy] claim), \
                         is missing, empty or not a string",
                        crate::text::head(claim, 80)
                    )),
                )
            }),
        }
    }

    /// `caller`, served the profile its token's claim names (if the claim
    /// is configured and the token has it; a name not configured offers
    /// nothing).
    fn profiled(&self, caller: Caller) -> Caller {
        let Some(claim) = &self.profile_claim else {
            return caller;
        };
        let name = match caller.text_claim(claim) {
            TextClaim::Text(name) => name,
            TextClaim::Absent => return caller,
            TextClaim::NotText => {
                // Confines it to nothing: a claim that is not a name is not
                // a way out of every profile.
                tracing::info!(
                    principal = caller.principal.as_deref().unwrap_or(""),
                    "refused: the token's {claim} claim (its profile) is not a string"
                );
                let nothing = crate::server::access::Profile::empty("(not a string)");
                return caller.in_profile(Arc::new(nothing));
            }
        };
        let profile = self
            .server
            .policy()
            .profile(name)
            .unwrap_or_else(|| Arc::new(crate::server::access::Profile::empty(name)));
        caller.in_profile(profile)
    }

    /// `response` with the challenge of a 403 that names the scopes the
    /// request needed (the server's `Forbidden` answer).
    fn challenged(&self, mut response: Response) -> Response {
        if response.status() != StatusCode::FORBIDDEN {
            return response;
        }
        let Some(scope) = response.extensions_mut().remove::<responses::NeedsScope>() else {
            return response;
        };
        let challenge = match &self.auth {
            Some(auth) => auth.insufficient_scope(&scope.0),
            None => format!("Bearer error=\"insufficient_scope\", scope=\"{}\"", scope.0),
        };
        if let Ok(value) = http::HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(http::header::WWW_AUTHENTICATE, value);
        }
        response
    }

    fn legacy_table(&self) -> parking_lot::MutexGuard<'_, HashMap<String, LegacyConnection>> {
        self.legacy.lock()
    }
}

/// The RFC 9728 protected-resource metadata.
async fn resource_metadata(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(refusal) = app.guard.check(&headers) {
        return refusal.into_response();
    }
    match &app.auth {
        Some(auth) => Json(auth.metadata.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn ready(State(app): State<Arc<App>>) -> Response {
    ops::ready(&app.server)
}

/// The metrics, for a client the endpoint would admit (the same Host,
/// Origin and bearer checks).
async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(refused) = app.admit(&headers).await {
        return *refused;
    }
    ops::metrics(app.server.clone()).await
}

/// The router for `server`, and the state its handlers share.
pub fn router(server: Arc<Server>, options: HttpOptions) -> (Router, Arc<App>) {
    let sessions = Arc::new(SessionTable::new(options.sessions.clone()));
    sessions.start_expiry(&server, options.session_idle);
    sessions.follow_ended(&server);
    let cors = cors_layer(&options.guard.allowed_origins);
    let guard = options.guard.clone();
    let app = Arc::new(App {
        server,
        sessions,
        legacy: Mutex::new(HashMap::new()),
        json_response: options.json_response,
        resume_grace: options.resume_grace,
        guard: options.guard,
        auth: options.auth,
        profile_claim: options.profile_claim,
        tenant_claim: options.tenant_claim,
    });
    let mut router = Router::new()
        .route(ops::HEALTH_PATH, get(ops::health))
        .route(ops::READY_PATH, get(ready))
        .route(ops::METRICS_PATH, get(metrics))
        .route(
            &options.path,
            post(endpoint::post)
                .get(endpoint::get)
                .delete(endpoint::delete),
        );
    let mut profiles = Vec::new();
    for (path, name) in &options.profile_paths {
        let Some(profile) = app.server.policy().profile(name) else {
            continue;
        };
        profiles.push((path.clone(), profile.clone()));
        let post = move |state, headers, body| {
            endpoint::post_in(state, headers, body, Some(profile.clone()))
        };
        router = router.route(
            path,
            axum::routing::post(post)
                .get(endpoint::get)
                .delete(endpoint::delete),
        );
    }
    if options.legacy_sse {
        router = router
            .route(legacy_sse::STREAM_PATH, get(legacy_sse::open))
            .route(legacy_sse::MESSAGES_PATH, post(legacy_sse::message));
    }
    if app.auth.is_some() {
        let well_known = "/.well-known/oauth-protected-resource";
        router = router.route(well_known, get(resource_metadata)).route(
            &format!("{well_known}{}", options.path),
            get(resource_metadata),
        );
    }
    let mut router = router
        .layer(DefaultBodyLimit::max(options.max_body_bytes))
        .with_state(app.clone());
    if let Some(cors) = cors {
        router = router.layer(cors);
    }
    // The cards have CORS of their own (any origin may read them), so they
    // join after the endpoint's.
    let cards = card::Cards::new(
        app.server.clone(),
        guard,
        options.card,
        options.tls.is_some(),
        app.auth.as_ref().map(|auth| auth.metadata_url.clone()),
        &options.path,
        profiles,
    );
    let router = router.merge(cards.routes());
    (router, app)
}

/// CORS for the configured browser origins (none: no CORS headers).
fn cors_layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers([
                HeaderName::from_static("mcp-session-id"),
                http::header::WWW_AUTHENTICATE,
            ])
            .max_age(Duration::from_secs(3600)),
    )
}

/// Serves `server` over HTTP on `listener` until Ctrl-C or SIGTERM.
pub async fn serve(
    server: Arc<Server>,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
) -> std::io::Result<()> {
    let connections = options.connections.clone();
    let drain = options.drain;
    let tls = match options.tls.clone() {
        Some(files) => Some(tls::acceptor(files).await.map_err(std::io::Error::other)?),
        None => None,
    };
    let (router, _app) = router(server.clone(), options);
    // Open event streams never end by themselves, so shutdown does not
    // wait for them.
    let stopping = async {
        shutdown_signal().await;
        // Unready from now on; connections already open may still ask
        // /readyz meanwhile.
        server.stop();
        // A replica goes on serving while the load balancer notices it is
        // unready and its work in progress ends.
        if let Some(within) = drain {
            server.drain(within).await;
        }
    };
    listener::serve(listener, router, connections, tls, stopping).await;
    server.publish(ServerEvent::Shutdown);
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM can be handled");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
