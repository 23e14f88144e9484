//! How many requests may be in progress at once, and how many bytes of
//! them: per connection (a stdio client or an HTTP session), per principal
//! (all unauthenticated clients are one), and in total. A request holds its
//! arguments until it ends (also while it waits for a plugin's turn), so
//! counting bytes bounds what queued calls keep. Beyond a cap a request is
//! refused at once with an error that says when to retry (HTTP answers it
//! with 429 and `Retry-After`); nothing is queued.

use crate::protocol::{ErrorCode, RpcError};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// When a refused client may try again, in milliseconds.
pub const RETRY_AFTER_MS: u64 = 1000;

/// The caps.
#[derive(Debug, Clone)]
pub struct AdmissionLimits {
    /// Requests in progress on one connection.
    pub per_connection: usize,
    /// Requests in progress for one principal.
    pub per_principal: usize,
    /// Requests in progress in all.
    pub total: usize,
    /// Bytes of requests (as received) in progress for one principal.
    pub bytes_per_principal: usize,
    /// Bytes of requests in progress in all.
    pub bytes_total: usize,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        AdmissionLimits {
            per_connection: 1024,
            per_principal: 4096,
            total: 16384,
            bytes_per_principal: 64 << 20,
            bytes_total: 256 << 20,
        }
    }
}

/// Requests and their bytes.
#[derive(Default, Clone, Copy)]
struct Load {
    requests: usize,
    bytes: usize,
}

/// The requests in progress: in all, and by principal.
#[derive(Default)]
pub(super) struct Admission {
    limits: AdmissionLimits,
    counts: Mutex<(Load, HashMap<String, Load>)>,
}

/// A request admitted; counted until dropped.
pub(super) struct Admitted {
    admission: Arc<Admission>,
    principal: String,
    bytes: usize,
}

impl Admission {
    /// The requests in progress.
    pub(super) fn in_progress(&self) -> usize {
        self.counts.lock().0.requests
    }

    /// Admission under `limits`.
    pub(super) fn new(limits: AdmissionLimits) -> Self {
        Admission {
            limits,
            counts: Mutex::default(),
        }
    }

    /// Admits one more request of `principal`, `bytes` long, on a
    /// connection that has `on_connection` in progress, or refuses it.
    pub(super) fn admit(
        self: &Arc<Self>,
        principal: Option<&str>,
        on_connection: usize,
        bytes: usize,
    ) -> Result<Admitted, RpcError> {
        let principal = principal.unwrap_or_default().to_owned();
        let limits = &self.limits;
        let mut counts = self.counts.lock();
        let theirs = counts.1.get(&principal).copied().unwrap_or_default();
        let all = counts.0;
        let over = if on_connection >= limits.per_connection {
            Some(too_many("this connection", limits.per_connection))
        } else if theirs.requests >= limits.per_principal {
            Some(too_many("this client", limits.per_principal))
        } else if all.requests >= limits.total {
            Some(too_many("the server", limits.total))
        } else if theirs.bytes + bytes > limits.bytes_per_principal {
            Some(too_large("this client", limits.bytes_per_principal))
        } else if all.bytes + bytes > limits.bytes_total {
            Some(too_large("the server", limits.bytes_total))
        } else {
            None
        };
        if let Some(refused) = over {
            return Err(refused);
        }
        let (all, by_principal) = &mut *counts;
        for load in [all, by_principal.entry(principal.clone()).or_default()] {
            load.requests += 1;
            load.bytes += bytes;
        }
        Ok(Admitted {
            admission: self.clone(),
            principal,
            bytes,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self.admission.counts.lock();
        counts.0.requests -= 1;
        counts.0.bytes -= self.bytes;
        if let Some(load) = counts.1.get_mut(&self.principal) {
            load.requests -= 1;
            load.bytes -= self.bytes;
            if load.requests == 0 {
                counts.1.remove(&self.principal);
            }
        }
    }
}

/// The data of a refusal to retry: `{"retryAfterMs": N}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RetryAfter {
    /// When to retry, in ms.
    retry_after_ms: u64,
}

impl RetryAfter {
    /// The data saying to retry after `ms`.
    pub(crate) fn ms(ms: u64) -> serde_json::Value {
        crate::protocol::model::to_json(&RetryAfter { retry_after_ms: ms })
    }
}

/// The refusal: an internal error whose data says when to retry.
fn refusal(message: String) -> RpcError {
    RpcError::new(ErrorCode::InternalError, message).with_data(RetryAfter::ms(RETRY_AFTER_MS))
}

fn too_many(whose: &str, cap: usize) -> RpcError {
    refusal(format!(
        "too many requests in progress for {whose} (at most {cap}); retry later"
    ))
}

fn too_large(whose: &str, cap: usize) -> RpcError {
    refusal(format!(
        "too many bytes of requests in progress for {whose} (at most {} MiB); retry later",
        cap >> 20
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_connection_principal_and_total() {
        let admission = Arc::new(Admission::new(AdmissionLimits {
            per_connection: 2,
            per_principal: 3,
            total: 4,
            ..AdmissionLimits::default()
        }));
        assert!(
            admission.admit(None, 2, 1).is_err(),
            "over the connection cap"
        );
        let a: Vec<_> = (0..3)
            .map(|i| admission.admit(Some("a"), i % 2, 1).unwrap())
            .collect();
        assert!(admission.admit(Some("a"), 0, 1).is_err());
        let b = admission.admit(Some("b"), 0, 1).unwrap();
        let Err(refused) = admission.admit(Some("c"), 0, 1) else {
            panic!("over the total cap");
        };
        assert!(refused.message.contains("the server"));
        drop(b);
        assert!(admission.admit(Some("c"), 0, 1).is_ok());
        drop(a);
        assert!(admission.admit(Some("a"), 0, 1).is_ok());
    }

    #[test]
    fn caps_bytes_per_principal_and_total() {
        let admission = Arc::new(Admission::new(AdmissionLimits {
            bytes_per_principal: 100,
            bytes_total: 150,
            ..AdmissionLimits::default()
        }));
        let a = admission.admit(Some("a"), 0, 60).unwrap();
        let Err(refused) = admission.admit(Some("a"), 0, 41) else {
            panic!("over the principal's bytes");
        };
        assert!(
            refused.message.contains("this client"),
            "{}",
            refused.message
        );
        let a2 = admission.admit(Some("a"), 0, 40).unwrap();
        assert!(admission.admit(Some("b"), 0, 51).is_err(), "over the total");
        let b = admission.admit(Some("b"), 0, 50).unwrap();
        drop((a, a2, b));
        assert!(admission.admit(Some("b"), 0, 100).is_ok(), "all given back");
    }
}
