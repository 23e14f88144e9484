//! Reading a request's params, with one error path: a -32602 that names
//! the param and what it must be.

use super::RpcError;
use serde_json::{Map, Value};

/// A request's params (or an object inside them), read by key.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a>(pub &'a Map<String, Value>);

/// -32602 for `what` is wrong: "Invalid params: {what}".
pub fn invalid(what: impl std::fmt::Display) -> RpcError {
    RpcError::invalid_params(format!("Invalid params: {what}"))
}

impl<'a> Params<'a> {
    /// The raw value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key)
    }

    /// The string `key`.
    pub fn str(&self, key: &str) -> Result<&'a str, RpcError> {
        self.optional_str(key)?
            .ok_or_else(|| must_be(key, "a string"))
    }

    /// The string `key`; `None` when absent or null.
    pub fn optional_str(&self, key: &str) -> Result<Option<&'a str>, RpcError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(must_be(key, "a string")),
        }
    }

    /// The object `key`.
    pub fn object(&self, key: &str) -> Result<Params<'a>, RpcError> {
        self.optional_object(key)?
            .ok_or_else(|| must_be(key, "an object"))
    }

    /// The object `key`; `None` when absent or null.
    pub fn optional_object(&self, key: &str) -> Result<Option<Params<'a>>, RpcError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(object)) => Ok(Some(Params(object))),
            Some(_) => Err(must_be(key, "an object")),
        }
    }

    /// The array `key`; `None` when absent or null.
    pub fn optional_array(&self, key: &str) -> Result<Option<&'a [Value]>, RpcError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(must_be(key, "an array")),
        }
    }
}

/// -32602: `key` must be `what`.
fn must_be(key: &str, what: &str) -> RpcError {
    invalid(format_args!("\"{key}\" must be {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_names_the_param_and_what_it_must_be() {
        let value = json!({ "s": "x", "o": { "k": 1 }, "a": [1], "n": null, "i": 5 });
        let params = Params(value.as_object().unwrap());
        assert_eq!(params.str("s").unwrap(), "x");
        assert_eq!(params.optional_str("n").unwrap(), None);
        assert_eq!(params.optional_str("absent").unwrap(), None);
        assert!(params.object("o").unwrap().get("k").is_some());
        assert_eq!(params.optional_array("a").unwrap().unwrap().len(), 1);
        let error = params.str("i").unwrap_err();
        assert_eq!(error.code, crate::protocol::ErrorCode::InvalidParams);
        assert_eq!(error.message, "Invalid params: \"i\" must be a string");
        assert!(params
            .object("s")
            .unwrap_err()
            .message
            .contains("an object"));
        assert!(params.optional_array("o").is_err());
        assert!(params.str("absent").is_err());
    }
}
