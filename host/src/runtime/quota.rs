//! How often one call may speak: a token bucket over the notifications a
//! plugin sends (log lines, progress, change notices, stdout/stderr
//! lines). What is over the rate is dropped and counted, and the count is
//! logged when the call ends.

use parking_lot::Mutex;
use std::time::Instant;

/// A call's notification allowance: `rate` per second, and a burst of as
/// many.
pub(super) struct Quota {
    rate: f64,
    state: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
    dropped: u64,
}

impl Quota {
    /// A full bucket of `rate` notifications, refilled at `rate` per second.
    pub(super) fn new(rate: u32) -> Self {
        Quota {
            rate: f64::from(rate),
            state: Mutex::new(Bucket {
                tokens: f64::from(rate),
                at: Instant::now(),
                dropped: 0,
            }),
        }
    }

    /// Whether one more notification may go; if not, it is counted as dropped.
    pub(super) fn take(&self) -> bool {
        let mut b = self.state.lock();
        let now = Instant::now();
        let refill = now.duration_since(b.at).as_secs_f64() * self.rate;
        b.tokens = (b.tokens + refill).min(self.rate);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            b.dropped += 1;
            false
        }
    }

    /// Counts a notification dropped for another reason (too large, not the
    /// plugin's to send).
    pub(super) fn drop_one(&self) {
        self.state.lock().dropped += 1;
    }

    /// How many were dropped so far.
    pub(super) fn dropped(&self) -> u64 {
        self.state.lock().dropped
    }
}

#[cfg(test)]
mod tests {
    use super::Quota;

    #[test]
    fn a_burst_then_drops() {
        let quota = Quota::new(10);
        let sent = (0..1000).filter(|_| quota.take()).count();
        // The burst, and whatever refilled while the loop ran.
        assert!((10..20).contains(&sent), "{sent}");
        assert_eq!(quota.dropped(), 1000 - sent as u64);
    }
}
