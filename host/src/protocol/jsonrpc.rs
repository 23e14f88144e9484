//! JSON-RPC 2.0 messages and errors.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A request id: a string or a number, kept as JSON.
pub type RequestId = Value;

/// The `"jsonrpc": "2.0"` member every message carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonRpc;

impl Serialize for JsonRpc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("2.0")
    }
}

/// A response carrying `result` for request `id`.
#[derive(Debug, Clone, Serialize)]
pub struct ResultResponse<'a, T> {
    /// `"2.0"`.
    pub jsonrpc: JsonRpc,
    /// The request's id.
    pub id: &'a RequestId,
    /// What the method answered.
    pub result: T,
}

/// A response carrying `error` for request `id` (`null` when the request
/// could not be read). `E` is an [`RpcError`], or an error object of a
/// code outside [`ErrorCode`] (HTTP authentication's).
#[derive(Debug, Clone, Serialize)]
pub struct ErrorResponse<'a, E = RpcError> {
    /// `"2.0"`.
    pub jsonrpc: JsonRpc,
    /// The request's id.
    pub id: &'a RequestId,
    /// What went wrong.
    pub error: &'a E,
}

/// A notification: `method` with `params`, answered by nothing.
#[derive(Debug, Clone, Serialize)]
pub struct Notification<'a, P> {
    /// `"2.0"`.
    pub jsonrpc: JsonRpc,
    /// The notification's method.
    pub method: &'a str,
    /// Its params.
    pub params: P,
}

/// JSON-RPC and MCP error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The text is not JSON.
    ParseError,
    /// The JSON is not a valid request.
    InvalidRequest,
    /// No such method.
    MethodNotFound,
    /// Wrong parameters (also resource-not-found on 2026-07-28).
    InvalidParams,
    /// The server failed.
    InternalError,
    /// Resource not found, before 2026-07-28.
    ResourceNotFound,
    /// HTTP headers do not match the body (2026-07-28).
    HeaderMismatch,
    /// The request needs a client capability that was not declared (2026-07-28).
    MissingRequiredClientCapability,
    /// The requested protocol version is not supported (2026-07-28).
    UnsupportedProtocolVersion,
    /// The caller's token lacks a scope or claim the operator requires
    /// (`data.scope` names the scopes; HTTP answers 403).
    Forbidden,
}

impl ErrorCode {
    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::Forbidden => -32003,
        }
    }

    /// The code with this number, if it is one of these.
    pub fn from_code(code: i64) -> Option<ErrorCode> {
        [
            ErrorCode::ParseError,
            ErrorCode::InvalidRequest,
            ErrorCode::MethodNotFound,
            ErrorCode::InvalidParams,
            ErrorCode::InternalError,
            ErrorCode::ResourceNotFound,
            ErrorCode::HeaderMismatch,
            ErrorCode::MissingRequiredClientCapability,
            ErrorCode::UnsupportedProtocolVersion,
            ErrorCode::Forbidden,
        ]
        .into_iter()
        .find(|c| c.code() == code)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: ErrorCode,
    /// One sentence saying what went wrong.
    pub message: String,
    /// Extra data, if any.
    pub data: Option<Value>,
}

/// The JSON `error` object: `code`, `message` and `data` (left out when
/// there is none).
impl Serialize for RpcError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            code: i64,
            #[serde(skip_serializing_if = "Option::is_none")]
            data: Option<&'a Value>,
            message: &'a str,
        }
        Wire {
            code: self.code.code(),
            data: self.data.as_ref(),
            message: &self.message,
        }
        .serialize(s)
    }
}

impl std::fmt::Display for RpcError {
    /// `CODE: message`, as a log line says it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.code(), self.message)
    }
}

impl std::error::Error for RpcError {}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// -32601 for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method}"),
        )
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// The JSON `error` object.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("an error object serializes")
    }

    /// The error a JSON `error` object describes (an unknown code reads as
    /// an internal error).
    pub fn from_json(error: &Value) -> Self {
        let code = error
            .get("code")
            .and_then(Value::as_i64)
            .and_then(ErrorCode::from_code)
            .unwrap_or(ErrorCode::InternalError);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the request failed");
        RpcError {
            code,
            message: message.to_owned(),
            data: error.get("data").cloned(),
        }
    }

    /// A whole error response for request `id` (`null` when unknown).
    pub fn response(&self, id: &RequestId) -> Value {
        let response = ErrorResponse {
            jsonrpc: JsonRpc,
            id,
            error: self,
        };
        serde_json::to_value(response).expect("an error response serializes")
    }
}

/// One message received from a client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, which gets exactly one response.
    Request {
        /// Its id.
        id: RequestId,
        /// Its method.
        method: String,
        /// Its params: always an object (empty when absent).
        params: Map<String, Value>,
    },
    /// A notification, which gets no response.
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        params: Map<String, Value>,
    },
    /// A response to a request the server sent.
    Response {
        /// The id of the server's request.
        id: RequestId,
        /// The result, or the error object.
        outcome: Result<Value, Value>,
    },
}

/// Parses one JSON-RPC message. Errors come with the id to answer to
/// (`null` when the message had none or could not be read).
pub fn parse_message(text: &str) -> Result<Incoming, (RequestId, RpcError)> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            Value::Null,
            RpcError::new(ErrorCode::ParseError, format!("Parse error: {e}")),
        )
    })?;
    let invalid = |id: &Value, why: &str| {
        (
            id.clone(),
            RpcError::new(ErrorCode::InvalidRequest, format!("Invalid request: {why}")),
        )
    };
    let Value::Object(mut obj) = value else {
        let why = if value.is_array() {
            "batch arrays are not supported; send one message per line"
        } else {
            "a message must be a JSON object"
        };
        return Err(invalid(&Value::Null, why));
    };
    let id = obj.remove("id");
    let id_value = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(&id_value, "\"jsonrpc\" must be \"2.0\""));
    }
    if let Some(id) = &id {
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            return Err(invalid(
                &Value::Null,
                "\"id\" must be a string or an integer",
            ));
        }
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = match obj.remove("params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(params)) => params,
                Some(_) => {
                    return Err((
                        id_value,
                        super::params::invalid("\"params\" must be an object"),
                    ))
                }
            };
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(_) => Err(invalid(&id_value, "\"method\" must be a string")),
        None => {
            let Some(id) = id else {
                return Err(invalid(&Value::Null, "no \"method\" and no \"id\""));
            };
            if let Some(result) = obj.remove("result") {
                Ok(Incoming::Response {
                    id,
                    outcome: Ok(result),
                })
            } else if let Some(error) = obj.remove("error") {
                Ok(Incoming::Response {
                    id,
                    outcome: Err(error),
                })
            } else {
                Err(invalid(&id, "no \"method\", \"result\" or \"error\""))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_requests_notifications_and_responses() {
        let r = parse_message(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert_eq!(
            r,
            Incoming::Request {
                id: json!(1),
                method: "ping".into(),
                params: Map::new()
            }
        );
        let n = parse_message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(n, Incoming::Notification { .. }));
        let resp = parse_message(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(resp, Incoming::Response { outcome: Ok(_), .. }));
    }

    #[test]
    fn an_rpc_error_is_an_error_that_says_its_code_and_message() {
        let error = RpcError::invalid_params("`name` is required");
        assert_eq!(error.to_string(), "-32602: `name` is required");
        let boxed: Box<dyn std::error::Error> = Box::new(error);
        assert!(boxed.source().is_none());
        let wrapped = anyhow::Error::new(RpcError::internal("down")).context("listing tools");
        assert_eq!(format!("{wrapped:#}"), "listing tools: -32603: down");
    }

    #[test]
    fn errors_and_messages_serialize_as_json_rpc_says() {
        let error = RpcError::invalid_params("bad");
        assert_eq!(
            error.response(&json!(3)),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}})
        );
        let with_data = RpcError::internal("down").with_data(json!({"why": 1}));
        assert_eq!(
            with_data.to_json(),
            json!({"code": -32603, "message": "down", "data": {"why": 1}})
        );
        assert_eq!(RpcError::from_json(&with_data.to_json()), with_data);
        let result = ResultResponse {
            jsonrpc: JsonRpc,
            id: &json!("a"),
            result: json!({}),
        };
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#
        );
        let note = Notification {
            jsonrpc: JsonRpc,
            method: "notifications/progress",
            params: json!({"n": 1}),
        };
        assert_eq!(
            serde_json::to_string(&note).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":1}}"#
        );
    }

    #[test]
    fn rejects_bad_messages_with_the_right_codes() {
        let code = |text: &str| parse_message(text).unwrap_err().1.code;
        assert_eq!(code("{not json"), ErrorCode::ParseError);
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            ErrorCode::InvalidParams
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            ErrorCode::InvalidRequest
        );
        let (id, _) = parse_message(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).unwrap_err();
        assert_eq!(id, json!(7));
    }
}
