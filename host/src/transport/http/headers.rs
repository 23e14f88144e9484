//! The request metadata headers of the stateless revision: `Mcp-Method`,
//! `Mcp-Name` and `Mcp-Param-*` must repeat the body (SEP-2243), and
//! `MCP-Protocol-Version` must match its `_meta`.

use crate::protocol::{meta, ErrorCode, HeaderParameter, RpcError};
use base64::Engine as _;
use http::header::AsHeaderName;
use http::{HeaderMap, HeaderName};
use serde_json::{Map, Value};

/// The `MCP-Protocol-Version` header.
pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD: HeaderName = HeaderName::from_static("mcp-method");
const NAME: HeaderName = HeaderName::from_static("mcp-name");

/// A header's value, trimmed; `Err` when it is not visible ASCII.
pub fn header<N>(headers: &HeaderMap, name: N) -> Result<Option<&str>, RpcError>
where
    N: AsHeaderName + std::fmt::Display + Copy,
{
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(|v| Some(v.trim())).map_err(|_| {
            mismatch(format!(
                "the {name} header has characters outside visible ASCII"
            ))
        }),
    }
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(
        ErrorCode::HeaderMismatch,
        format!("Header mismatch: {message}"),
    )
}

/// Why a `=?base64?…?=` header value cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The text between the markers is not base64.
    #[error("invalid base64 ({0})")]
    Base64(#[from] base64::DecodeError),
    /// The bytes it encodes are not UTF-8.
    #[error("base64 of something that is not UTF-8")]
    NotUtf8,
}

/// Decodes a `=?base64?…?=` value; any other value is taken literally.
pub fn decode(value: &str) -> Result<String, DecodeError> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded)?;
    String::from_utf8(bytes).map_err(|_| DecodeError::NotUtf8)
}

/// Checks the headers of a stateless request against its body.
/// `mirrored` are the called tool's header parameters, for `tools/call`.
pub fn validate(
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
    mirrored: &[HeaderParameter],
) -> Result<(), RpcError> {
    let header_version = header(headers, &PROTOCOL_VERSION)?
        .ok_or_else(|| mismatch("the MCP-Protocol-Version header is required".into()))?;
    let body_version = params
        .get("_meta")
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let Some(body_version) = body_version else {
        return Err(crate::protocol::params::invalid(format!(
            "missing _meta keys: {}",
            meta::PROTOCOL_VERSION
        )));
    };
    if header_version != body_version {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header value '{header_version}' does not match body value '{body_version}'"
        )));
    }
    match header(headers, &METHOD)? {
        None => return Err(mismatch("the Mcp-Method header is required".into())),
        Some(m) if m != method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{m}' does not match body value '{method}'"
            )))
        }
        Some(_) => {}
    }
    let parsed = crate::protocol::Method::parse(method);
    if let Some(field) = parsed.and_then(|m| m.name_param()) {
        let body = params
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(raw) = header(headers, &NAME)? else {
            // Clients only lately began to send it on tasks/*: one missing
            // there is accepted (and counted); a wrong one never is.
            if parsed.is_some_and(crate::protocol::Method::is_task_method) {
                crate::metrics::metrics().lenient(crate::metrics::Lenience::TaskWithoutMcpName);
                return check_mirrored(headers, params, mirrored);
            }
            return Err(mismatch("the Mcp-Name header is required".into()));
        };
        let value = decode(raw).map_err(|e| mismatch(format!("Mcp-Name header: {e}")))?;
        if value != body {
            return Err(mismatch(format!(
                "Mcp-Name header value '{value}' does not match body value '{body}'"
            )));
        }
    }
    check_mirrored(headers, params, mirrored)
}

/// The `Mcp-Param-*` headers of the tool parameters `mirrored`.
fn check_mirrored(
    headers: &HeaderMap,
    params: &Map<String, Value>,
    mirrored: &[HeaderParameter],
) -> Result<(), RpcError> {
    if !mirrored.is_empty() {
        let arguments = params.get("arguments").unwrap_or(&Value::Null);
        for parameter in mirrored {
            check_param(headers, parameter, parameter.value_in(arguments))?;
        }
    }
    Ok(())
}

/// One `Mcp-Param-{name}` header against the argument it mirrors.
fn check_param(
    headers: &HeaderMap,
    parameter: &HeaderParameter,
    body: Option<&Value>,
) -> Result<(), RpcError> {
    let name = &parameter.name;
    let raw = header(headers, parameter.header.as_str())?;
    let (Some(body), raw) = (body, raw) else {
        return Ok(());
    };
    let Some(raw) = raw else {
        return Err(mismatch(format!(
            "the Mcp-Param-{name} header is required: the argument it mirrors is present"
        )));
    };
    let value = decode(raw).map_err(|e| mismatch(format!("Mcp-Param-{name} header: {e}")))?;
    let matches = match body {
        Value::String(s) => *s == value,
        Value::Bool(b) => value == b.to_string(),
        Value::Number(n) => value
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(h, b)| h == b),
        _ => false,
    };
    if matches {
        Ok(())
    } else {
        Err(mismatch(format!(
            "Mcp-Param-{name} header value '{value}' does not match body value {body}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    fn params(extra: Value) -> Map<String, Value> {
        let mut p = json!({ "_meta": { meta::PROTOCOL_VERSION: "2026-07-28" } });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p.as_object().unwrap().clone()
    }

    #[test]
    fn base64_sentinels_decode_and_anything_else_is_literal() {
        assert_eq!(decode("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode("=?base64?SGVsbG8?=").is_err(), "bad padding");
        assert!(decode("=?base64?SGVs!!!bG8=?=").is_err());
        assert_eq!(decode("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
        assert_eq!(decode("SGVsbG8=").unwrap(), "SGVsbG8=");
    }

    #[test]
    fn method_name_and_params_must_repeat_the_body() {
        let schema = json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "n": { "type": "integer", "x-mcp-header": "N" } } });
        let p = params(json!({ "name": "q", "arguments": { "region": "eu", "n": 42 } }));
        let good = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", " tools/call "),
            ("mcp-name", "q"),
            ("mcp-param-region", "=?base64?ZXU=?="),
            ("Mcp-Param-N", "42.0"),
        ]);
        let mirrored = crate::protocol::header_parameters(&schema);
        assert!(validate(&good, "tools/call", &p, &mirrored).is_ok());
        let code = |h: &HeaderMap| validate(h, "tools/call", &p, &mirrored).unwrap_err().code;
        let mut missing = good.clone();
        missing.remove("mcp-param-region");
        assert_eq!(code(&missing), ErrorCode::HeaderMismatch);
        let mut wrong_case = good.clone();
        wrong_case.insert("mcp-method", "TOOLS/CALL".parse().unwrap());
        assert_eq!(code(&wrong_case), ErrorCode::HeaderMismatch);
        let mut wrong_name = good.clone();
        wrong_name.insert("mcp-name", "other".parse().unwrap());
        assert_eq!(code(&wrong_name), ErrorCode::HeaderMismatch);
        let mut no_version = good.clone();
        no_version.remove("mcp-protocol-version");
        assert_eq!(code(&no_version), ErrorCode::HeaderMismatch);
    }
}
