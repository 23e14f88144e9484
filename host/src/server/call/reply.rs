//! What running a plugin call for one request comes to: one typed reply,
//! rendered by the method that asked for the call.

use super::wire::InputRequiredResult;
use super::{Ended, Execution};
use crate::protocol::{ResultType, RpcError};
use crate::server::Outcome;
use serde_json::{Map, Value};

/// The questions a parked call waits on, and the sealed state that
/// resumes it (2026-07-28).
#[derive(Debug)]
pub(crate) struct InputRequired {
    /// `inputRequests`: key → `{ method, params }`.
    pub requests: Map<String, Value>,
    /// The sealed `requestState`.
    pub state: String,
}

impl InputRequired {
    /// The input-required result.
    pub(crate) fn to_json(&self) -> Value {
        crate::protocol::model::to_json(&InputRequiredResult {
            result_type: ResultType::InputRequired.as_str(),
            input_requests: &self.requests,
            request_state: &self.state,
        })
    }
}

/// One call's reply to its request.
pub(crate) enum Reply {
    /// It finished with this result.
    Complete(Value),
    /// It failed with a JSON-RPC error.
    Failed(RpcError),
    /// The plugin crashed, for this reason.
    Crashed(String),
    /// It was cancelled: nothing is sent.
    Nothing,
    /// It waits for the client's input.
    InputRequired(InputRequired),
    /// It goes on as a task: the task store takes it.
    BecameTask(Execution),
}

impl From<Ended> for Reply {
    fn from(ended: Ended) -> Self {
        match ended {
            Ended::Outcome(Ok(super::Done::Result(result))) => Reply::Complete(result),
            Ended::Outcome(Ok(super::Done::NoResponse)) => Reply::Nothing,
            Ended::Outcome(Err(error)) => Reply::Failed(error),
            Ended::Crashed(why) => Reply::Crashed(why),
        }
    }
}

impl Reply {
    /// The answer to a request whose call cannot go on as a task: a crash
    /// is -32603.
    pub(crate) fn into_outcome(self) -> Outcome {
        match self {
            Reply::Complete(result) => Ok(super::Done::Result(result)),
            Reply::Failed(error) => Err(error),
            Reply::Crashed(why) => Err(RpcError::internal(why)),
            Reply::Nothing => Ok(super::Done::NoResponse),
            Reply::InputRequired(input) => Ok(super::Done::Result(input.to_json())),
            Reply::BecameTask(_) => Err(RpcError::internal(
                "the call went on as a task, which this request does not allow",
            )),
        }
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Complete(result) => f.debug_tuple("Complete").field(result).finish(),
            Reply::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            Reply::Crashed(why) => f.debug_tuple("Crashed").field(why).finish(),
            Reply::Nothing => f.write_str("Nothing"),
            Reply::InputRequired(input) => f.debug_tuple("InputRequired").field(input).finish(),
            Reply::BecameTask(_) => f.write_str("BecameTask"),
        }
    }
}
