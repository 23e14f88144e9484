//! Accepting HTTP connections so that slow or idle clients cannot crowd
//! out the others: a cap on open connections, a deadline for a request's
//! headers and one for its body, and an idle timeout between requests.
//!
//! At the cap, a new connection takes the place of the open connection
//! that has been idle longest (no request in progress: waiting for one, or
//! still receiving its headers); a request in progress (an SSE stream
//! included) is never closed for another. When every open connection is
//! busy, the new one is closed at once.

use axum::body::Body;
use axum::Router;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tower::ServiceExt as _;

/// How connections are bounded.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Connections open at once.
    pub max_connections: usize,
    /// The longest a client may take to send a request's headers.
    pub header_timeout: Duration,
    /// The longest a client may take to send a request's body.
    pub body_timeout: Duration,
    /// How long a connection may wait for its next request.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// Requests one HTTP/2 connection may have in progress at once.
pub(super) const MAX_STREAMS_PER_CONNECTION: u32 = 128;

tokio::task_local! {
    /// The client address of the connection whose request is being
    /// handled (for the log of refusals).
    static PEER: Option<std::net::SocketAddr>;
}

/// The client address of the request being handled, when known.
pub(super) fn peer() -> Option<std::net::SocketAddr> {
    PEER.try_with(|peer| *peer).ok().flatten()
}

/// Serves `router` on `listener` (over TLS with `tls`) until `shutdown`
/// resolves.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let table = Arc::new(Table::new(limits.max_connections));
    let reaper = tokio::spawn(reap_idle(Arc::downgrade(&table), limits.idle_timeout));
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, or the peer gave up: wait a moment.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(slot) = table.admit() else {
            crate::metrics::metrics().refused(crate::metrics::Refusal::Connections);
            tracing::warn!(
                max = limits.max_connections,
                "connection refused: every open connection has a request in progress"
            );
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(
            stream,
            slot,
            router.clone(),
            limits.clone(),
            tls.clone(),
        ));
    }
    reaper.abort();
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    slot: Slot,
    router: Router,
    limits: ConnectionLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let close = slot.close.clone();
    let peer = stream.peer_addr().ok();
    let header_timeout = limits.header_timeout;
    let slot = Arc::new(slot);
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let busy = Busy::new(slot.clone());
        let body_timeout = limits.body_timeout;
        let mut request = request.map(|body| Body::new(DeadlineBody::new(body, body_timeout)));
        // HTTP/2 names the host in `:authority`: the checks read `Host`.
        if request.version() == http::Version::HTTP_2
            && !request.headers().contains_key(http::header::HOST)
        {
            let authority = request.uri().authority().map(|a| a.as_str().to_owned());
            if let Some(value) = authority.and_then(|a| http::HeaderValue::from_str(&a).ok()) {
                request.headers_mut().insert(http::header::HOST, value);
            }
        }
        let router = router.clone();
        async move {
            let response = PEER.scope(peer, router.oneshot(request)).await?;
            Ok::<_, std::convert::Infallible>(
                response.map(|body| Body::new(Tracked { body, _busy: busy })),
            )
        }
    });
    let Some(tls) = tls else {
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(stream), service);
        tokio::select! {
            _ = connection => {}
            () = close.notified() => {}
        }
        return;
    };
    // The handshake is held to the deadline of a request's headers.
    let handshake = tokio::time::timeout(header_timeout, tls.accept(stream));
    let stream = tokio::select! {
        done = handshake => match done {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => {
                tracing::debug!("a TLS handshake failed: {error}");
                return;
            }
            Err(_) => return,
        },
        () = close.notified() => return,
    };
    let mut builder =
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .keep_alive_interval(Some(Duration::from_secs(20)));
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = connection => {}
        () = close.notified() => {}
    }
}

/// The open connections.
struct Table {
    max: usize,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Entry>>,
}

struct Entry {
    /// Requests in progress.
    busy: usize,
    /// Since when none is.
    idle_since: Instant,
    close: Arc<Notify>,
}

impl Table {
    fn new(max: usize) -> Self {
        Table {
            max: max.max(1),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<u64, Entry>> {
        self.open.lock()
    }

    /// A slot for a new connection, closing the longest-idle one at the cap.
    fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut open = self.lock();
        if open.len() >= self.max {
            let (&victim, _) = open
                .iter()
                .filter(|(_, e)| e.busy == 0)
                .min_by_key(|(_, e)| e.idle_since)?;
            if let Some(entry) = open.remove(&victim) {
                entry.close.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        open.insert(
            id,
            Entry {
                busy: 0,
                idle_since: Instant::now(),
                close: close.clone(),
            },
        );
        Some(Slot {
            id,
            table: self.clone(),
            close,
        })
    }
}

/// Closes connections idle longer than `idle`.
async fn reap_idle(table: std::sync::Weak<Table>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        tokio::time::sleep(every).await;
        let Some(table) = table.upgrade() else { return };
        table.lock().retain(|_, e| {
            let expired = e.busy == 0 && e.idle_since.elapsed() >= idle;
            if expired {
                e.close.notify_one();
            }
            !expired
        });
    }
}

/// One open connection's place in the table.
struct Slot {
    id: u64,
    table: Arc<Table>,
    close: Arc<Notify>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.lock().remove(&self.id);
    }
}

/// A request in progress on a connection, until its response is sent.
struct Busy(Arc<Slot>);

impl Busy {
    fn new(slot: Arc<Slot>) -> Self {
        if let Some(entry) = slot.table.lock().get_mut(&slot.id) {
            entry.busy += 1;
        }
        Busy(slot)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(entry) = self.0.table.lock().get_mut(&self.0.id) {
            entry.busy -= 1;
            entry.idle_since = Instant::now();
        }
    }
}

/// A response body that keeps its request marked in progress until it is
/// sent (or dropped).
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that must arrive whole within a deadline.
struct DeadlineBody {
    body: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl DeadlineBody {
    fn new(body: Incoming, timeout: Duration) -> Self {
        DeadlineBody {
            body,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            let timeout = self.timeout;
            return Poll::Ready(Some(Err(format!(
                "the request body did not arrive within {timeout:?}"
            )
            .into())));
        }
        Pin::new(&mut self.body)
            .poll_frame(cx)
            .map(|frame| frame.map(|f| f.map_err(Into::into)))
    }
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room_and_busy_ones_stay() {
        let table = Arc::new(Table::new(2));
        let first = Arc::new(table.admit().unwrap());
        std::thread::sleep(Duration::from_millis(5));
        let second = Arc::new(table.admit().unwrap());
        let _busy = Busy::new(second.clone());
        // The first (idle) makes room for a third.
        let third = table.admit().unwrap();
        assert!(!table.lock().contains_key(&first.id));
        // Now the second is busy and the third idle: a fourth replaces the third.
        let _fourth = table.admit().unwrap();
        assert!(!table.lock().contains_key(&third.id));
        assert!(table.lock().contains_key(&second.id));
        // With every connection busy, a new one is refused.
        let table = Arc::new(Table::new(1));
        let only = Arc::new(table.admit().unwrap());
        let _busy = Busy::new(only);
        assert!(table.admit().is_none());
    }
}
