//! Calls per second, per principal and per principal and tool, as the
//! operator sets them. Each limit is a bucket holding one second's worth
//! of calls (at least one), kept as the one instant at which it is full
//! again (GCRA). The buckets are bounded in number: full ones are
//! forgotten when room is needed, and when every one is in use a call is
//! refused rather than tracked without bound.

use crate::config::Config;
use crate::protocol::{ErrorCode, RpcError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Buckets kept at most.
pub const MAX_BUCKETS: usize = 100_000;

/// One limit: the time one call costs, and how much may be spent ahead.
#[derive(Debug, Clone, Copy)]
struct Rate {
    interval: Duration,
    burst: Duration,
}

impl Rate {
    fn per_sec(calls: f64) -> Self {
        let interval = Duration::from_secs_f64(1.0 / calls);
        // One second's worth of calls at once, and at least one.
        let burst = Duration::from_secs_f64((calls.ceil().max(1.0) - 1.0) / calls);
        Rate { interval, burst }
    }
}

/// A bucket: the principal, and the plugin and tool if it is a tool's.
type Key = (String, Option<(String, String)>);

/// The limits and their buckets.
#[derive(Debug, Default)]
pub struct Rates {
    per_principal: Option<Rate>,
    per_tool: HashMap<(String, String), Rate>,
    buckets: Mutex<HashMap<Key, Instant>>,
}

impl Rates {
    /// The limits `config` sets.
    pub fn of(config: &Config) -> Self {
        let rate = config.server.calls_per_sec_per_principal;
        let mut per_tool = HashMap::new();
        for (plugin, section) in &config.plugins {
            for (tool, item) in &section.tools {
                if let Some(calls) = item.calls_per_sec {
                    per_tool.insert((plugin.clone(), tool.clone()), Rate::per_sec(calls));
                }
            }
        }
        Rates {
            per_principal: (rate > 0.0).then(|| Rate::per_sec(rate)),
            per_tool,
            buckets: Mutex::default(),
        }
    }

    /// Counts one call of `principal`, to `tool` of `plugin` when it is a
    /// tool call, or refuses it with when to retry.
    pub fn take(
        &self,
        principal: Option<&str>,
        tool: Option<(&str, &str)>,
    ) -> Result<(), RpcError> {
        if self.per_principal.is_none() && self.per_tool.is_empty() {
            return Ok(());
        }
        let tool_rate = tool.and_then(|(plugin, tool)| {
            self.per_tool
                .get(&(plugin.to_owned(), tool.to_owned()))
                .map(|rate| (*rate, (plugin.to_owned(), tool.to_owned())))
        });
        if self.per_principal.is_none() && tool_rate.is_none() {
            return Ok(());
        }
        let caller = principal;
        let principal = principal.unwrap_or_default().to_owned();
        let now = Instant::now();
        let limits: Vec<(Key, Rate)> = self
            .per_principal
            .map(|rate| ((principal.clone(), None), rate))
            .into_iter()
            .chain(tool_rate.map(|(rate, tool)| ((principal.clone(), Some(tool)), rate)))
            .collect();
        let mut buckets = self.buckets.lock();
        // Every limit is checked before any is counted: a refused call
        // costs nothing.
        let (mut wait, mut which) = (Duration::ZERO, "");
        for (key, rate) in &limits {
            let full_at = buckets.get(key).copied().unwrap_or(now).max(now);
            let ahead = full_at - now;
            if ahead > rate.burst && ahead - rate.burst > wait {
                wait = ahead - rate.burst;
                which = if key.1.is_some() {
                    "this tool's"
                } else {
                    "this client's"
                };
            }
        }
        if !wait.is_zero() {
            let retry_after_ms = (wait.as_millis() as u64).max(1);
            return Err(refused(
                caller,
                format!(
                    "Too many calls: over {which} calls per second; retry in {retry_after_ms} ms"
                ),
                retry_after_ms,
            ));
        }
        let new_keys = limits
            .iter()
            .filter(|(key, _)| !buckets.contains_key(key))
            .count();
        if buckets.len() + new_keys > MAX_BUCKETS {
            buckets.retain(|_, full_at| *full_at > now);
            if buckets.len() + new_keys > MAX_BUCKETS {
                return Err(refused(
                    caller,
                    "Too many callers are being rate limited at once; retry in 1000 ms".into(),
                    1000,
                ));
            }
        }
        for (key, rate) in limits {
            let full_at = buckets.get(&key).copied().unwrap_or(now).max(now);
            buckets.insert(key, full_at + rate.interval);
        }
        Ok(())
    }
}

/// A call refused for its rate, counted and logged: an internal error
/// whose data says when to retry (`retryAfterMs`; over HTTP, a 429 with
/// `Retry-After`).
fn refused(principal: Option<&str>, message: String, retry_after_ms: u64) -> RpcError {
    crate::metrics::metrics().refused(crate::metrics::Refusal::Rate);
    let detail = format!("retry after {retry_after_ms} ms");
    super::refusals::note(&super::refusals::Refusal {
        reason: "rate",
        message: &message,
        detail: Some(&detail),
        principal,
        client: None,
    });
    RpcError::new(ErrorCode::InternalError, message)
        .with_data(super::admission::RetryAfter::ms(retry_after_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(toml: &str) -> Rates {
        Rates::of(&Config::parse(toml, std::path::Path::new(".")).unwrap())
    }

    #[test]
    fn a_burst_of_one_seconds_worth_then_refusals_that_say_when() {
        let rates = rates(
            "[server]\ncalls_per_sec_per_principal = 5\n\
             [plugins.p.tools.slow]\ncalls_per_sec = 0.5\n",
        );
        for _ in 0..5 {
            rates.take(Some("ada"), Some(("p", "fast"))).unwrap();
        }
        let refused = rates.take(Some("ada"), Some(("p", "fast"))).unwrap_err();
        let wait = refused.data.unwrap()["retryAfterMs"].as_u64().unwrap();
        assert!((1..=200).contains(&wait), "{wait}");
        // Others have buckets of their own.
        rates.take(Some("bob"), None).unwrap();
        rates.take(None, None).unwrap();

        // A tool's own limit: one call, then about two seconds.
        rates.take(Some("cy"), Some(("p", "slow"))).unwrap();
        let refused = rates.take(Some("cy"), Some(("p", "slow"))).unwrap_err();
        assert!(
            refused.message.contains("this tool's"),
            "{}",
            refused.message
        );
        let wait = refused.data.unwrap()["retryAfterMs"].as_u64().unwrap();
        assert!((1000..=2000).contains(&wait), "{wait}");
        // The refused call did not spend the principal's bucket.
        for _ in 0..3 {
            rates.take(Some("cy"), Some(("p", "other"))).unwrap();
        }
    }

    #[test]
    fn without_limits_nothing_is_kept() {
        let rates = rates("");
        for _ in 0..1000 {
            rates.take(Some("ada"), Some(("p", "t"))).unwrap();
        }
        assert!(rates.buckets.lock().is_empty());
    }
}
