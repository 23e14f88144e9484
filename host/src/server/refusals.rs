//! The operator's log of refused requests: one `info` line per refusal
//! (target `wasm_mcp::refused`) with its reason and, where known, the
//! principal and the client's address, so that a caller who cannot get in
//! can be helped. A flood of refusals cannot flood the log: at most
//! [`MAX_LINES`] lines per [`WINDOW`], then one `warn` line that counts the
//! refusals left out.

use crate::protocol::{ErrorCode, RpcError};
use parking_lot::Mutex;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Refusal lines logged per window, at most.
pub const MAX_LINES: u32 = 20;

/// The most bytes of a field that may quote the caller.
pub const MAX_FIELD_BYTES: usize = 400;

/// The window [`MAX_LINES`] counts over.
pub const WINDOW: Duration = Duration::from_secs(10);

/// One refusal, as the log tells it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Refusal<'a> {
    /// A short code (`expired`, `wrong_audience`, `rate`, ...).
    pub reason: &'static str,
    /// What the caller was told (logged escaped: it may quote the caller).
    pub message: &'a str,
    /// More for the operator (may quote the caller: logged quoted and
    /// escaped, cut to [`MAX_FIELD_BYTES`]).
    pub detail: Option<&'a str>,
    /// Who asked, when known.
    pub principal: Option<&'a str>,
    /// From where, when known.
    pub client: Option<SocketAddr>,
}

/// How many lines the current window has logged, and left out.
struct Window {
    start: Instant,
    logged: u32,
    suppressed: u64,
    /// Whether a task will report the suppressed count at the window's end.
    reporter: bool,
}

/// Logs a refusal by the access policy, with the reason its error's
/// data gives (`missing_scope`, `missing_claim_value`, `profile`,
/// `unnamed_plugin`; else `scope` for a 403, `profile` otherwise).
pub fn note_access(principal: Option<&str>, error: &RpcError) {
    let given = error
        .data
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(serde_json::Value::as_str);
    let reason = match given {
        Some("missing_scope") => "missing_scope",
        Some("missing_claim_value") => "missing_claim_value",
        Some("profile") => "profile",
        Some("unnamed_plugin") => "unnamed_plugin",
        _ if error.code == ErrorCode::Forbidden => "scope",
        _ => "profile",
    };
    note(&Refusal {
        reason,
        message: &error.message,
        principal,
        ..Refusal::default()
    });
}

/// At most [`MAX_FIELD_BYTES`] of `text`: the log quotes it with every
/// quote, backslash and control character escaped.
fn clip(text: &str) -> &str {
    crate::text::head(text, MAX_FIELD_BYTES)
}

/// The windows of one log.
struct Limiter(Mutex<Option<Window>>);

static LOG: Limiter = Limiter(parking_lot::const_mutex(None));

/// Logs `refusal`, unless this window has logged [`MAX_LINES`] already.
pub fn note(refusal: &Refusal<'_>) {
    if LOG.admit(Instant::now()) {
        tracing::info!(
            target: "wasm_mcp::refused",
            reason = %refusal.reason,
            principal = refusal.principal.map(clip),
            client = refusal.client.map(tracing::field::display),
            detail = refusal.detail.map(clip),
            "refused a request: {}",
            crate::text::excerpt(refusal.message)
        );
    }
}

impl Limiter {
    /// Whether a line may be logged at `now`: counts it, or counts it left
    /// out (and has the count reported at the window's end).
    fn admit(&'static self, now: Instant) -> bool {
        let mut state = self.0.lock();
        let window = state.get_or_insert_with(|| Window {
            start: now,
            logged: 0,
            suppressed: 0,
            reporter: false,
        });
        if now.duration_since(window.start) >= WINDOW {
            report(window.suppressed);
            *window = Window {
                start: now,
                logged: 0,
                suppressed: 0,
                reporter: false,
            };
        }
        if window.logged < MAX_LINES {
            window.logged += 1;
            return true;
        }
        window.suppressed += 1;
        if !window.reporter {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                window.reporter = true;
                let start = window.start;
                runtime.spawn(async move {
                    tokio::time::sleep_until((start + WINDOW).into()).await;
                    let mut state = self.0.lock();
                    if let Some(window) = state.as_mut().filter(|w| w.start == start) {
                        report(std::mem::take(&mut window.suppressed));
                    }
                });
            }
        }
        false
    }
}

/// The line that counts the refusals a window left out.
fn report(suppressed: u64) {
    if suppressed > 0 {
        tracing::warn!(
            target: "wasm_mcp::refused",
            suppressed,
            "{suppressed} more refused requests were not logged (at most {MAX_LINES} lines per {}s)",
            WINDOW.as_secs()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_logged_bounded_and_counted() {
        static LIMITER: Limiter = Limiter(parking_lot::const_mutex(None));
        let start = Instant::now();
        let logged = (0..500).filter(|_| LIMITER.admit(start)).count();
        assert_eq!(logged, MAX_LINES as usize);
        assert_eq!(LIMITER.0.lock().as_ref().unwrap().suppressed, 480);
        // The next window starts afresh.
        assert!(LIMITER.admit(start + WINDOW));
        let state = LIMITER.0.lock();
        let window = state.as_ref().unwrap();
        assert_eq!((window.logged, window.suppressed), (1, 0));
    }
}
