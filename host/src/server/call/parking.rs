//! Input-required results (2026-07-28, multi round-trip requests): a plugin
//! that asks the client a question is parked mid-call; the request is
//! answered with `resultType: "input_required"`, the questions, and a
//! sealed `requestState`; the client's retry with `inputResponses` resumes
//! the parked call where it stopped.
//!
//! The state is an HMAC-SHA256-sealed reference to the parked call, bound
//! to the principal, the method and its parameters, and expiring. Parked
//! calls are bounded in number and time; an abandoned one is aborted,
//! which frees its instance.

use super::waiting::{WaitSlot, Waiting};
use super::{CallEvent, Execution, InputRequired, Reply, Round, ToolCaller};
use crate::protocol::{random_id, RpcError};
use crate::server::Outbox;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Calls parked at once, at most.
pub(super) const MAX_PARKED: usize = 1024;

/// What a sealed state is bound to: who asked, which method, with what.
/// Its hash is made only when a state is sealed or opened (most calls
/// never ask).
pub(crate) struct Binding<'a> {
    principal: Option<&'a str>,
    method: &'a str,
    target: &'a str,
    arguments: &'a Value,
}

impl<'a> Binding<'a> {
    /// The binding of `method` on `target` (tool or prompt name, resource
    /// URI) with `arguments`, for `principal`.
    pub(crate) fn new(
        principal: Option<&'a str>,
        method: &'a str,
        target: &'a str,
        arguments: &'a Value,
    ) -> Self {
        Binding {
            principal,
            method,
            target,
            arguments,
        }
    }

    fn hash(&self) -> String {
        let mut hash = Sha256::new();
        for part in [self.principal.unwrap_or(""), self.method, self.target] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hash.update(self.arguments.to_string().as_bytes());
        B64.encode(hash.finalize())
    }
}

struct Parked {
    execution: Execution,
    expires: Instant,
    /// Counts the call against its principal's waiting calls.
    _slot: WaitSlot,
}

/// The parked calls, and the key that seals their states.
pub(crate) struct Parking {
    key: ring::hmac::Key,
    parked: Mutex<HashMap<String, Parked>>,
    /// Ids of states already used, with when they expire: a state resumes
    /// its call once, never again.
    spent: Mutex<HashMap<String, u64>>,
    ttl: Duration,
    waiting: Arc<Waiting>,
}

/// Used states remembered at most (beyond, the soonest to expire are
/// forgotten first).
const MAX_SPENT: usize = 16 * MAX_PARKED;

fn invalid_state(why: &str) -> RpcError {
    crate::protocol::params::invalid(format_args!("invalid requestState ({why})"))
}

/// Milliseconds since the Unix epoch.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Parking {
    /// Parking for calls that wait at most `ttl` for their retry, counted
    /// against their principal's cap of `waiting` calls.
    pub(crate) fn new(ttl: Duration, waiting: Arc<Waiting>) -> Arc<Self> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the OS random source is available");
        Arc::new(Parking {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
            parked: Mutex::new(HashMap::new()),
            spent: Mutex::new(HashMap::new()),
            ttl,
            waiting,
        })
    }

    /// Drops abandoned calls now and then, for as long as `parking` exists
    /// (the server spawns it).
    pub(crate) async fn expire_now_and_then(parking: Weak<Parking>) {
        let Some(ttl) = parking.upgrade().map(|p| p.ttl) else {
            return;
        };
        let every = (ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        loop {
            tokio::time::sleep(every).await;
            let Some(parking) = parking.upgrade() else {
                return;
            };
            parking.expire();
        }
    }

    /// Calls parked now.
    pub(crate) fn len(&self) -> usize {
        self.table().len()
    }

    fn table(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock()
    }

    /// Drops parked calls whose time is up (aborting them), and forgets
    /// used states that expired.
    fn expire(&self) {
        let unix = unix_now();
        self.spent.lock().retain(|_, expires| *expires >= unix);
        let now = Instant::now();
        let expired: Vec<Parked> = {
            let mut table = self.table();
            let ids: Vec<String> = table
                .iter()
                .filter(|(_, p)| p.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| table.remove(id)).collect()
        };
        if !expired.is_empty() {
            tracing::debug!(
                expired = expired.len(),
                "abandoned input-required calls dropped"
            );
        }
    }

    fn seal(&self, id: &str, binding: &Binding) -> String {
        let expires = unix_now() + self.ttl.as_millis() as u64;
        let payload = format!("{id}.{expires}.{}", binding.hash());
        let tag = ring::hmac::sign(&self.key, payload.as_bytes());
        format!("{}.{}", B64.encode(payload), B64.encode(tag.as_ref()))
    }

    /// The parked call a state names, after checking its seal, expiry and
    /// binding.
    fn unseal(&self, state: &str, binding: &Binding) -> Result<(String, u64), RpcError> {
        let (payload, tag) = state
            .split_once('.')
            .ok_or_else(|| invalid_state("malformed"))?;
        let payload = B64
            .decode(payload)
            .map_err(|_| invalid_state("malformed"))?;
        let tag = B64.decode(tag).map_err(|_| invalid_state("malformed"))?;
        ring::hmac::verify(&self.key, &payload, &tag)
            .map_err(|_| invalid_state("it failed its integrity check"))?;
        let payload = String::from_utf8(payload).map_err(|_| invalid_state("malformed"))?;
        let mut parts = payload.splitn(3, '.');
        let (Some(id), Some(expires), Some(bound)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid_state("malformed"));
        };
        let expires = expires
            .parse::<u64>()
            .map_err(|_| invalid_state("malformed"))?;
        if expires < unix_now() {
            return Err(invalid_state("it expired"));
        }
        if bound != binding.hash() {
            return Err(invalid_state(
                "it belongs to another request, parameters or principal",
            ));
        }
        Ok((id.to_owned(), expires))
    }

    /// Records that the state of `id` was used; an error if it was before.
    fn spend(&self, id: &str, expires: u64) -> Result<(), RpcError> {
        let mut spent = self.spent.lock();
        if spent.contains_key(id) {
            return Err(invalid_state("it was used already"));
        }
        if spent.len() >= MAX_SPENT {
            let unix = unix_now();
            spent.retain(|_, e| *e >= unix);
            if spent.len() >= MAX_SPENT {
                let mut by_expiry: Vec<(u64, String)> =
                    spent.iter().map(|(id, e)| (*e, id.clone())).collect();
                by_expiry.sort();
                for (_, id) in by_expiry.iter().take(MAX_SPENT / 2) {
                    spent.remove(id);
                }
            }
        }
        spent.insert(id.to_owned(), expires);
        Ok(())
    }

    /// The parked call `state` names, given the client's new answers;
    /// `Ok(None)` when the state is genuine but the call is gone (expired
    /// or evicted), so the request runs afresh with its answers.
    pub(crate) fn resume(
        &self,
        state: &str,
        binding: &Binding,
        responses: Map<String, Value>,
    ) -> Result<Option<Execution>, RpcError> {
        let (id, expires) = self.unseal(state, binding)?;
        self.spend(&id, expires)?;
        let Some(mut parked) = self.table().remove(&id) else {
            return Ok(None);
        };
        if let Some(waiting) = parked.execution.waiting.take() {
            let _ = waiting.send(responses);
        }
        Ok(Some(parked.execution))
    }

    /// Runs `execution` for the request whose stream is `reply` (and whose
    /// credentials its tool calls carry: `tool_caller`), until it
    /// finishes, asks questions (parked; an input-required reply), the
    /// request is cancelled (dropped; nothing is sent), or, when
    /// `escalation` is given, the plugin asks to go on as a task or is
    /// still running after it (a task).
    pub(crate) async fn drive(
        &self,
        mut execution: Execution,
        binding: Binding<'_>,
        reply: &Outbox,
        tool_caller: Option<Arc<dyn ToolCaller>>,
        cancel: CancellationToken,
        escalation: Option<Duration>,
    ) -> Result<Reply, RpcError> {
        enum Next {
            Ended(Reply),
            Input(Round),
            Cancelled,
            BecomeTask,
        }
        execution.link.relink(reply.clone());
        execution.link.call_tools_through(tool_caller);
        let threshold = tokio::time::sleep(escalation.unwrap_or(Duration::MAX));
        tokio::pin!(threshold);
        // The call runs first (it is polled here, not on a task of its own);
        // then what it said is looked at, in order: a call that asked to go
        // on as a task and then asked a question goes on as a task, its
        // question waiting for the task's client.
        let next = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => break Next::Cancelled,
                ended = &mut execution.task => break Next::Ended(ended.into()),
                Some(event) = execution.events.recv() => match event {
                    CallEvent::WantsTask if escalation.is_some() => break Next::BecomeTask,
                    CallEvent::Asked(round) => break Next::Input(round),
                    CallEvent::WantsTask | CallEvent::Waiting(_) => {}
                },
                () = &mut threshold, if escalation.is_some() => break Next::BecomeTask,
            }
        };
        // Nothing more goes to this request's stream.
        execution.link.relink(Outbox::discard());
        match next {
            Next::Ended(reply) => Ok(reply),
            Next::Cancelled => Ok(Reply::Nothing),
            Next::BecomeTask => Ok(Reply::BecameTask(execution)),
            Next::Input(round) => {
                execution.waiting = Some(round.answered);
                let state = self.park(execution, &binding)?;
                Ok(Reply::InputRequired(InputRequired {
                    requests: round.requests,
                    state,
                }))
            }
        }
    }

    fn park(&self, execution: Execution, binding: &Binding) -> Result<String, RpcError> {
        self.expire();
        let slot = self
            .waiting
            .take(binding.principal)
            .map_err(RpcError::internal)?;
        let id = random_id();
        {
            let mut table = self.table();
            if table.len() >= MAX_PARKED {
                return Err(RpcError::internal(
                    "too many requests are waiting for input; try again later",
                ));
            }
            table.insert(
                id.clone(),
                Parked {
                    execution,
                    expires: Instant::now() + self.ttl,
                    _slot: slot,
                },
            );
            tracing::debug!(parked = table.len(), "a call waits for the client's input");
        }
        Ok(self.seal(&id, binding))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn states_are_sealed_bound_and_tamper_evident() {
        let parking = Parking::new(Duration::from_secs(60), Waiting::new(8));
        let (one, two) = (json!({ "a": 1 }), json!({ "a": 2 }));
        let binding = Binding::new(Some("ada"), "tools/call", "t", &one);
        let state = parking.seal("id1", &binding);
        assert_eq!(parking.unseal(&state, &binding).unwrap().0, "id1");
        let mut tampered = state.clone();
        tampered.push('x');
        assert!(parking.unseal(&tampered, &binding).is_err());
        assert!(parking
            .unseal(&format!("{state}-TAMPERED"), &binding)
            .is_err());
        let other = Binding::new(Some("bob"), "tools/call", "t", &one);
        assert!(parking.unseal(&state, &other).is_err());
        let changed = Binding::new(Some("ada"), "tools/call", "t", &two);
        assert!(parking.unseal(&state, &changed).is_err());
        let stranger = Parking::new(Duration::from_secs(60), Waiting::new(8));
        assert!(stranger.unseal(&state, &binding).is_err());
    }

    #[tokio::test]
    async fn a_state_is_used_once() {
        let parking = Parking::new(Duration::from_secs(60), Waiting::new(8));
        let none = json!({});
        let binding = Binding::new(None, "tools/call", "t", &none);
        let state = parking.seal("id1", &binding);
        // The call is gone (never parked): it runs afresh, once.
        assert!(parking
            .resume(&state, &binding, Map::new())
            .unwrap()
            .is_none());
        let again = parking.resume(&state, &binding, Map::new());
        assert!(again.is_err_and(|e| e.message.contains("used already")));
    }
}
