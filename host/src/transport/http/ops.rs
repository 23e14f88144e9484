//! What operators and orchestrators ask the host: liveness, readiness and
//! metrics. Served on the MCP listener, and on `[metrics] listen` (which
//! also works when the MCP clients speak stdio).

use crate::server::Server;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderValue, StatusCode};
use std::sync::Arc;

/// Answers 200 while the host serves HTTP at all (liveness).
pub const HEALTH_PATH: &str = "/healthz";

/// Answers 200 when the host is ready for traffic, 503 with the reasons
/// when it is not (see [`Server::unready`]).
pub const READY_PATH: &str = "/readyz";

/// The metrics, as Prometheus text.
pub const METRICS_PATH: &str = "/metrics";

/// The liveness answer's body.
#[derive(serde::Serialize)]
struct Health {
    /// `alive`.
    status: &'static str,
}

pub(super) async fn health() -> Response {
    Json(Health { status: "alive" }).into_response()
}

pub(super) fn ready(server: &Server) -> Response {
    let reasons = server.unready();
    let mut body = server.readiness_details();
    if reasons.is_empty() {
        body.insert("status".into(), "ready".into());
        Json(body).into_response()
    } else {
        body.insert("status".into(), "not ready".into());
        body.insert("reasons".into(), reasons.into());
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    }
}

/// The last rendering of the metrics and when it was done. One rendering
/// runs at a time, and scrapes that arrive while it runs share it: however
/// many scrapes come at once, the host holds one rendering in memory.
static RENDERED: tokio::sync::Mutex<Option<(std::time::Instant, bytes::Bytes)>> =
    tokio::sync::Mutex::const_new(None);

pub(super) async fn metrics(server: Arc<Server>) -> Response {
    let asked = std::time::Instant::now();
    let mut rendered = RENDERED.lock().await;
    let text = match &*rendered {
        // Rendered while this scrape waited: as fresh as one of its own.
        Some((done, text)) if *done >= asked => Ok(text.clone()),
        _ => {
            let snapshot = server.snapshot().await;
            // Rendering every series is work: off the async workers.
            let text = tokio::task::spawn_blocking(move || {
                bytes::Bytes::from(crate::metrics::metrics().render(&snapshot))
            })
            .await;
            if let Ok(text) = &text {
                *rendered = Some((std::time::Instant::now(), text.clone()));
            }
            text
        }
    };
    drop(rendered);
    match text {
        Ok(text) => (
            [(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            )],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Liveness, readiness and metrics alone, for an address of their own
/// (no authentication: bind it where only the scraper reaches).
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route(HEALTH_PATH, get(health))
        .route(
            READY_PATH,
            get(|State(server): State<Arc<Server>>| async move { ready(&server) }),
        )
        .route(
            METRICS_PATH,
            get(|State(server): State<Arc<Server>>| metrics(server)),
        )
        .with_state(server)
}

/// Serves [`router`] on `listener` until the process ends, with the
/// default connection limits (deadlines for slow clients, a connection cap).
pub async fn serve(server: Arc<Server>, listener: tokio::net::TcpListener) {
    let limits = super::ConnectionLimits::default();
    super::listener::serve(
        listener,
        router(server),
        limits,
        None,
        std::future::pending(),
    )
    .await;
}
