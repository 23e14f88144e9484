//! Calls waiting for their client's answer (a question sent on a stream,
//! or a call parked until an input-required retry), capped per principal
//! (all unauthenticated clients are one). A waiting call holds no plugin
//! slot, but it keeps an instance and its memory: the cap bounds what one
//! client that never answers can keep alive.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The waiting calls, by principal.
pub(crate) struct Waiting {
    cap: usize,
    counts: Mutex<HashMap<String, usize>>,
}

/// One waiting call; counted until dropped.
pub(crate) struct WaitSlot {
    waiting: Arc<Waiting>,
    principal: String,
}

impl Waiting {
    /// At most `cap` waiting calls per principal.
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Waiting {
            cap,
            counts: Mutex::default(),
        })
    }

    /// A slot for one more waiting call of `principal`, or why not.
    pub(crate) fn take(self: &Arc<Self>, principal: Option<&str>) -> Result<WaitSlot, String> {
        let principal = principal.unwrap_or_default().to_owned();
        let mut counts = self.counts.lock();
        let theirs = counts.entry(principal.clone()).or_default();
        if *theirs >= self.cap {
            return Err(format!(
                "too many calls are waiting for this client's answers (at most {}); \
                 answer or cancel some first",
                self.cap
            ));
        }
        *theirs += 1;
        Ok(WaitSlot {
            waiting: self.clone(),
            principal,
        })
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        let mut counts = self.waiting.counts.lock();
        if let Some(n) = counts.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_per_principal_and_given_back() {
        let waiting = Waiting::new(2);
        let a: Vec<_> = (0..2).map(|_| waiting.take(Some("a")).unwrap()).collect();
        assert!(waiting.take(Some("a")).is_err());
        let _b = waiting.take(Some("b")).unwrap();
        let _anonymous = waiting.take(None).unwrap();
        drop(a);
        assert!(waiting.take(Some("a")).is_ok());
    }
}
