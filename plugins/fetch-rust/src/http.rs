//! GET through `wasi:http`, following redirects. The host sends a request
//! only to the hosts the plugin was granted; everything else fails here
//! with the host's refusal.

use url::Url;
use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, Method, OutgoingRequest, RequestOptions, Scheme};

/// The most redirects followed (httpx's default).
const MAX_REDIRECTS: usize = 20;
/// The largest body read, so that a huge page is a clear error rather than
/// an exhausted instance.
pub const MAX_BODY_BYTES: usize = 16 << 20;
/// Connect, first-byte and between-bytes timeouts, in nanoseconds.
const TIMEOUT_NS: u64 = 30_000_000_000;

/// A response, after redirects.
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text, decoded by the charset the content type names
    /// (UTF-8 unless it says Latin-1), invalid sequences replaced.
    pub fn text(&self) -> String {
        let charset = self
            .content_type
            .to_ascii_lowercase()
            .split(';')
            .find_map(|p| {
                p.trim()
                    .strip_prefix("charset=")
                    .map(|c| c.trim_matches('"').to_owned())
            });
        match charset.as_deref() {
            Some("iso-8859-1" | "latin-1" | "latin1" | "windows-1252") => {
                self.body.iter().map(|&b| char::from(b)).collect()
            }
            _ => String::from_utf8_lossy(&self.body).into_owned(),
        }
    }
}

/// Why a request got no response.
pub enum Failure {
    /// The host does not grant this plugin the request's host.
    Denied(String),
    /// The request could not be made or answered (the host's reason).
    Transport(String),
    /// A hop of a redirect was refused by the caller.
    Refused(String),
}

/// GETs `url` as `user_agent`, following redirects; `before_hop` is asked
/// about every hop after the first and may refuse it.
pub fn get(
    url: &Url,
    user_agent: &str,
    mut before_hop: impl FnMut(&Url) -> Result<(), String>,
) -> Result<Response, Failure> {
    let mut at = url.clone();
    for hop in 0..=MAX_REDIRECTS {
        if hop > 0 {
            before_hop(&at).map_err(Failure::Refused)?;
        }
        let (status, headers, body) = once(&at, user_agent)?;
        let location = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("location"))
            .map(|(_, value)| value.clone());
        if matches!(status, 301 | 302 | 303 | 307 | 308) {
            if let Some(location) = location {
                at = at.join(&location).map_err(|e| {
                    Failure::Transport(format!("bad redirect to {location:?}: {e}"))
                })?;
                continue;
            }
        }
        let content_type = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        return Ok(Response {
            status,
            content_type,
            body,
        });
    }
    Err(Failure::Transport(format!(
        "more than {MAX_REDIRECTS} redirects"
    )))
}

type Answer = (u16, Vec<(String, String)>, Vec<u8>);

fn once(url: &Url, user_agent: &str) -> Result<Answer, Failure> {
    let denied = |e: ErrorCode| match e {
        ErrorCode::HttpRequestDenied => Failure::Denied(format!(
            "the host does not grant this plugin {} (see its [plugins.fetch] hosts)",
            url.host_str().unwrap_or("that host")
        )),
        other => Failure::Transport(describe(other)),
    };
    request(url, user_agent, denied)
}

fn request(
    url: &Url,
    user_agent: &str,
    denied: impl Fn(ErrorCode) -> Failure,
) -> Result<Answer, Failure> {
    let transport = |e: &str| Failure::Transport(e.to_owned());
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(transport(&format!("unsupported URL scheme {other:?}"))),
    };
    let host = url
        .host_str()
        .ok_or_else(|| transport("the URL has no host"))?;
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path = format!("{path}?{query}");
    }
    let headers = Fields::from_list(&[
        ("User-Agent".to_owned(), user_agent.as_bytes().to_vec()),
        ("Accept".to_owned(), b"*/*".to_vec()),
    ])
    .map_err(|e| transport(&format!("{e:?}")))?;
    let request = OutgoingRequest::new(headers);
    request
        .set_method(&Method::Get)
        .map_err(|()| transport("method"))?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| transport("scheme"))?;
    request
        .set_authority(Some(&authority))
        .map_err(|()| transport(&format!("bad authority {authority:?}")))?;
    request
        .set_path_with_query(Some(&path))
        .map_err(|()| transport(&format!("bad path {path:?}")))?;
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(Some(TIMEOUT_NS));
    let _ = options.set_first_byte_timeout(Some(TIMEOUT_NS));
    let _ = options.set_between_bytes_timeout(Some(TIMEOUT_NS));
    let pending = outgoing_handler::handle(request, Some(options)).map_err(&denied)?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or_else(|| transport("no response"))?
        .map_err(|()| transport("the response was taken twice"))?
        .map_err(&denied)?;
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect();
    let body = response.consume().map_err(|()| transport("no body"))?;
    let stream = body.stream().map_err(|()| transport("no body stream"))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > MAX_BODY_BYTES {
                    return Err(transport(&format!(
                        "the response is larger than {} MiB, the most this plugin reads",
                        MAX_BODY_BYTES >> 20
                    )));
                }
            }
            Err(wasi::io::streams::StreamError::Closed) => break,
            Err(wasi::io::streams::StreamError::LastOperationFailed(e)) => {
                return Err(transport(&e.to_debug_string()))
            }
        }
    }
    Ok((status, headers, bytes))
}

fn describe(e: ErrorCode) -> String {
    match e {
        ErrorCode::DnsError(_) => "the name could not be resolved".into(),
        ErrorCode::ConnectionRefused => "the connection was refused".into(),
        ErrorCode::ConnectionTimeout => "the connection timed out".into(),
        other => format!("{other:?}"),
    }
}
