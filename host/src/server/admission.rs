//! How many requests may be in progress at once: per connection (a stdio
//! client or an HTTP session), per principal (all unauthenticated clients
//! are one), and in total. Beyond a cap a request is refused at once with
//! an error that says when to retry (HTTP answers it with 429 and
//! `Retry-After`); nothing is queued.

use crate::protocol::{ErrorCode, RpcError};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        AdmissionLimits {
            per_connection: 1024,
            per_principal: 4096,
            total: 16384,
        }
    }
}

/// The requests in progress, by principal.
#[derive(Default)]
pub struct Admission {
    limits: AdmissionLimits,
    counts: Mutex<(usize, HashMap<String, usize>)>,
}

/// A request admitted; counted until dropped.
pub struct Admitted {
    admission: Arc<Admission>,
    principal: String,
}

impl Admission {
    /// Admission under `limits`.
    pub fn new(limits: AdmissionLimits) -> Self {
        Admission {
            limits,
            counts: Mutex::default(),
        }
    }

    /// Admits one more request of `principal` on a connection that has
    /// `on_connection` in progress, or refuses it.
    pub fn admit(
        self: &Arc<Self>,
        principal: Option<&str>,
        on_connection: usize,
    ) -> Result<Admitted, RpcError> {
        let principal = principal.unwrap_or_default().to_owned();
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let theirs = counts.1.get(&principal).copied().unwrap_or(0);
        let over = if on_connection >= self.limits.per_connection {
            Some(("this connection", self.limits.per_connection))
        } else if theirs >= self.limits.per_principal {
            Some(("this client", self.limits.per_principal))
        } else if counts.0 >= self.limits.total {
            Some(("the server", self.limits.total))
        } else {
            None
        };
        if let Some((whose, cap)) = over {
            return Err(too_many(whose, cap));
        }
        counts.0 += 1;
        *counts.1.entry(principal.clone()).or_default() += 1;
        Ok(Admitted {
            admission: self.clone(),
            principal,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self
            .admission
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        counts.0 -= 1;
        if let Some(n) = counts.1.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                counts.1.remove(&self.principal);
            }
        }
    }
}

/// The refusal: an internal error whose data says when to retry.
fn too_many(whose: &str, cap: usize) -> RpcError {
    RpcError::new(
        ErrorCode::InternalError,
        format!("too many requests in progress for {whose} (at most {cap}); retry later"),
    )
    .with_data(json!({ "retryAfterMs": RETRY_AFTER_MS }))
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
        }));
        assert!(admission.admit(None, 2).is_err(), "over the connection cap");
        let a: Vec<_> = (0..3)
            .map(|i| admission.admit(Some("a"), i % 2).unwrap())
            .collect();
        assert!(admission.admit(Some("a"), 0).is_err());
        let b = admission.admit(Some("b"), 0).unwrap();
        let Err(refused) = admission.admit(Some("c"), 0) else {
            panic!("over the total cap");
        };
        assert!(refused.message.contains("the server"));
        drop(b);
        assert!(admission.admit(Some("c"), 0).is_ok());
        drop(a);
        assert!(admission.admit(Some("a"), 0).is_ok());
    }
}
