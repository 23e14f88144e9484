//! `resultType` (2026-07-28): what kind of result a stateless request got.
//! Written here only.

use serde_json::{Map, Value};

/// The kinds of result a 2026-07-28 request can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    /// The request's own result.
    Complete,
    /// The call waits for the client's input (a retry resumes it).
    InputRequired,
    /// The call goes on as a task.
    Task,
}

impl ResultType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
        }
    }

    /// Sets `result`'s `resultType` to this one.
    pub fn tag(self, result: &mut Map<String, Value>) {
        result.insert(Self::KEY.into(), Value::from(self.as_str()));
    }

    /// Sets `result`'s `resultType` to this one unless it has one.
    pub fn tag_unless_set(self, result: &mut Map<String, Value>) {
        result
            .entry(Self::KEY)
            .or_insert_with(|| Value::from(self.as_str()));
    }

    /// The key.
    pub const KEY: &'static str = "resultType";
}

impl serde::Serialize for ResultType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
