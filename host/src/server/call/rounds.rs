//! Input-required rounds (2026-07-28): the plugin's questions handed to
//! whoever drives the call, and the client's answers handed back.

use super::events::Events;
use super::input::Wanted;
use crate::runtime::host_types::{Answer, InputError};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A plugin's questions that the client has not answered yet.
pub struct Round {
    /// `inputRequests`: key → `{ method, params }`.
    pub requests: Map<String, Value>,
    /// Where the client's `inputResponses` go when it retries.
    pub answered: oneshot::Sender<Map<String, Value>>,
}

/// The plugin's side of the rounds: the answers so far, and a way to ask
/// for more.
pub(crate) struct Rounds {
    responses: Mutex<Map<String, Value>>,
    events: Events,
    timeout: Duration,
}

impl Rounds {
    /// Rounds that start with the `inputResponses` a request carried; each
    /// round of unanswered questions goes out as an [`Events::asked`] (one
    /// at a time: the call waits for its answers before it can ask again).
    pub(crate) fn new(
        responses: Map<String, Value>,
        timeout: Duration,
        events: Events,
    ) -> Arc<Self> {
        Arc::new(Rounds {
            responses: Mutex::new(responses),
            events,
            timeout,
        })
    }

    /// Answers `wanted` from the client's responses, asking for the ones it
    /// has not answered (or answered with something unreadable) until all
    /// are answered. Answers come in the order of `wanted`.
    pub(crate) async fn answer(&self, wanted: &[Wanted]) -> Vec<Result<Answer, InputError>> {
        let mut answers: Vec<Option<Result<Answer, InputError>>> =
            wanted.iter().map(|_| None).collect();
        loop {
            {
                let responses = self.responses.lock();
                for (answer, w) in answers.iter_mut().zip(wanted) {
                    if answer.is_none() {
                        if let Some(parsed) = responses.get(&w.key).and_then(|v| w.parse(v).ok()) {
                            *answer = Some(Ok(parsed));
                        }
                    }
                }
            }
            let missing: Map<String, Value> = answers
                .iter()
                .zip(wanted)
                .filter(|(a, _)| a.is_none())
                .map(|(_, w)| (w.key.clone(), w.request()))
                .collect();
            if missing.is_empty() {
                return answers.into_iter().flatten().collect();
            }
            let (answered, rx) = oneshot::channel();
            let round = Round {
                requests: missing,
                answered,
            };
            let failure = if !self.events.asked(round) {
                Some(InputError::Cancelled)
            } else {
                match tokio::time::timeout(self.timeout, rx).await {
                    Ok(Ok(new)) => {
                        self.responses.lock().extend(new);
                        None
                    }
                    Ok(Err(_)) => Some(InputError::Cancelled),
                    Err(_) => Some(InputError::Timeout),
                }
            };
            if let Some(failure) = failure {
                return answers
                    .into_iter()
                    .map(|a| a.unwrap_or_else(|| Err(failure.clone())))
                    .collect();
            }
        }
    }
}
