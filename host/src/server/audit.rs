//! The audit log: one JSON line per call into a plugin and per refused
//! request (time, principal, plugin, what was called, outcome, duration,
//! trace id, and a digest of the arguments, never their values), written
//! by a thread of its own to a file (rotated by size) or to stderr. Lines
//! wait in a bounded queue; when the writer falls behind, new lines are
//! dropped and counted (`wasm_mcp_audit_lines_dropped_total`), and no
//! request ever waits for the log.

use super::access::{Caller, Item};
use crate::config::AuditSection;
use anyhow::{Context as _, Result};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One line.
#[derive(Debug, Default, Serialize)]
pub struct Entry<'a> {
    /// What happened: `"call"` or `"refused"`.
    pub event: &'static str,
    /// Who asked (absent: an anonymous or local caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<&'a str>,
    /// Whose plugin data it reached (absent: the local tenant); at most
    /// 256 bytes of the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<&'a str>,
    /// The MCP method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'a str>,
    /// The plugin it went to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<&'a str>,
    /// The tool or prompt (the plugin's own name for it), the resource
    /// URI or template, or the skill, that was reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<&'a str>,
    /// `ok`, `tool_error`, `error`, or why it was refused
    /// (`unauthenticated`, `forbidden`, `rate_limited`, `busy`).
    pub outcome: &'a str,
    /// The JSON-RPC error code, for an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// Why it was refused, for a refusal: what the caller was told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    /// Whether it was a task's call run again after its replica stopped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rerun: bool,
    /// How long it took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// The W3C trace id of the request, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// `sha256:` of the arguments as JSON text, when there were any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
    /// For a tool a plugin called (code mode): the call that called it,
    /// `PLUGIN.TOOL`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<&'a str>,
}

/// The log's writer end.
pub struct Audit {
    lines: SyncSender<Vec<u8>>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Audit")
    }
}

/// `sha256:` over `value` as JSON text.
pub fn digest(value: &Value) -> String {
    let mut hasher = Sha256::new();
    // Written straight into the hash: no copy of big arguments.
    let _ = serde_json::to_writer(HashWriter(&mut hasher), value);
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where lines are written.
enum Sink {
    Stderr,
    File {
        path: PathBuf,
        file: std::io::BufWriter<std::fs::File>,
        written: u64,
        max: u64,
        keep: u32,
    },
}

fn open_append(path: &PathBuf) -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Non-blocking: a FIFO without a reader fails at once instead of
    // hanging the start (and is refused below with one).
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("opening the audit log {}", path.display()))?;
    let metadata = file.metadata()?;
    anyhow::ensure!(
        metadata.is_file(),
        "the audit log {} is not a regular file",
        path.display()
    );
    Ok((file, metadata.len()))
}

impl Sink {
    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stderr => std::io::stderr().lock().write_all(line),
            Sink::File {
                path,
                file,
                written,
                max,
                keep,
            } => {
                if *written > 0 && *written + line.len() as u64 > *max {
                    file.flush()?;
                    rotate(path, *keep)?;
                    let (fresh, _) = open_append(path).map_err(std::io::Error::other)?;
                    *file = std::io::BufWriter::new(fresh);
                    *written = 0;
                }
                file.write_all(line)?;
                *written += line.len() as u64;
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stderr => Ok(()),
            Sink::File { file, .. } => file.flush(),
        }
    }
}

/// `FILE` → `FILE.1` → … → `FILE.keep` (the oldest dropped).
fn rotate(path: &std::path::Path, keep: u32) -> std::io::Result<()> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    for n in (1..keep).rev() {
        let from = numbered(n);
        if from.exists() {
            std::fs::rename(&from, numbered(n + 1))?;
        }
    }
    std::fs::rename(path, numbered(1))
}

impl Audit {
    /// The log `section` asks for (`None`: no `file`), its writer started.
    pub fn open(section: &AuditSection) -> Result<Option<Self>> {
        let Some(path) = &section.file else {
            return Ok(None);
        };
        let mut sink = if path.as_os_str() == "-" {
            Sink::Stderr
        } else {
            let (file, written) = open_append(path)?;
            Sink::File {
                path: path.clone(),
                file: std::io::BufWriter::new(file),
                written,
                max: section.max_file_mb << 20,
                keep: section.keep_files,
            }
        };
        let (lines, queue) = mpsc::sync_channel::<Vec<u8>>(section.queue);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                while let Ok(line) = queue.recv() {
                    let mut result = sink.write(&line);
                    // Whatever else is waiting goes in the same flush.
                    while let (Ok(()), Ok(line)) = (&result, queue.try_recv()) {
                        result = sink.write(&line);
                    }
                    if let Err(error) = result.and_then(|()| sink.flush()) {
                        tracing::error!("writing the audit log failed: {error}");
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            })
            .context("starting the audit log's writer")?;
        Ok(Some(Audit { lines }))
    }

    /// Adds `entry` (stamped with the time now), or drops it (counted)
    /// when the writer is behind.
    pub fn record(&self, entry: &Entry<'_>) {
        #[derive(Serialize)]
        struct Stamped<'a> {
            time: String,
            #[serde(flatten)]
            entry: &'a Entry<'a>,
        }
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        let stamped = Stamped {
            time: super::clock::timestamp(ms),
            entry,
        };
        let mut line = serde_json::to_vec(&stamped).expect("audit entries serialize");
        line.push(b'\n');
        match self.lines.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                crate::metrics::metrics().audit_dropped()
            }
        }
    }
}

/// What came of a request, as the log says it.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// `ok`, `tool_error`, `error`, `forbidden`, `rate_limited`.
    pub label: &'static str,
    /// Whether the request was refused (for its token or its rate).
    pub refused: bool,
    /// The JSON-RPC error code, for an error.
    pub code: Option<i64>,
}

impl Outcome {
    /// A request answered with `result` (none: cancelled, or no answer).
    pub fn answered(result: Option<&Value>) -> Self {
        let tool_error = result.is_some_and(|r| r.get("isError") == Some(&Value::Bool(true)));
        Outcome {
            label: if tool_error { "tool_error" } else { "ok" },
            refused: false,
            code: None,
        }
    }

    /// A request answered with `error`.
    pub fn failed(error: &crate::protocol::RpcError) -> Self {
        use crate::protocol::ErrorCode;
        let code = Some(error.code.code());
        let rate = error
            .data
            .as_ref()
            .is_some_and(|d| d.get("retryAfterMs").is_some());
        // Outside a profile is a refusal too, though the wire calls it
        // invalid params.
        // So are a plugin's tool calls its grant or its bounds refuse.
        let outside_profile = error.data.as_ref().is_some_and(|d| {
            matches!(
                d.get("reason").and_then(Value::as_str),
                Some("profile" | "call_tools" | "self" | "depth" | "bound")
            )
        });
        let (label, refused) = match error.code {
            ErrorCode::Forbidden => ("forbidden", true),
            _ if outside_profile => ("forbidden", true),
            _ if rate => ("rate_limited", true),
            _ => ("error", false),
        };
        Outcome {
            label,
            refused,
            code,
        }
    }
}

/// What one request reached: the plugin and item its access was decided
/// for (set by `Request::may_see`, whether it passed or not).
#[derive(Debug, Default)]
pub struct Reached(parking_lot::Mutex<Option<(String, String)>>);

impl Reached {
    /// Notes that `item` was reached.
    pub fn set(&self, item: &Item<'_>) {
        *self.0.lock() = Some((item.plugin().to_owned(), item.name().to_owned()));
    }

    fn take(&self) -> Option<(String, String)> {
        self.0.lock().take()
    }
}

/// What the log records of one answered request: the calls into plugins,
/// and any request refused for its token or its rate.
pub(super) struct Served<'a> {
    pub principal: Option<&'a str>,
    pub tenant: &'a crate::tenant::Tenant,
    pub method: Option<crate::protocol::Method>,
    pub params: &'a serde_json::Map<String, Value>,
    pub outcome: Outcome,
    pub error: Option<&'a crate::protocol::RpcError>,
    pub reached: &'a Reached,
    pub took: Duration,
    pub span: &'a tracing::Span,
    /// For a tool a plugin called: the call that called it.
    pub parent: Option<&'a str>,
}

impl Audit {
    /// Records `served` if it reached a plugin's item (a call) or was
    /// refused: the plugin and item are those the access decision was
    /// made for, never guessed from the request's words.
    pub(super) fn served(&self, served: Served<'_>) {
        let Outcome {
            label: outcome,
            refused,
            code,
        } = served.outcome;
        use crate::protocol::Method;
        let reached = served.reached.take();
        let call = matches!(
            served.method,
            Some(Method::CallTool | Method::ReadResource | Method::GetPrompt | Method::Complete)
        );
        let reached_by_call = call && reached.is_some();
        if !reached_by_call && !refused {
            return;
        }
        let arguments = served
            .params
            .get("arguments")
            .filter(|a| a.as_object().is_some_and(|o| !o.is_empty()));
        let (plugin, target) = match &reached {
            Some((plugin, target)) => (Some(plugin.as_str()), Some(target.as_str())),
            None => (None, None),
        };
        let reason = served
            .error
            .filter(|_| refused)
            .map(|e| crate::text::head(&e.message, MAX_REASON_BYTES));
        self.record(&Entry {
            event: if refused { "refused" } else { "call" },
            principal: served.principal,
            tenant: tenant_of(served.tenant),
            method: served.method.map(crate::protocol::Method::as_str),
            plugin,
            target: target.map(|t| crate::text::head(t, MAX_TARGET_BYTES)),
            outcome,
            code,
            reason,
            duration_ms: Some(served.took.as_secs_f64() * 1000.0),
            trace_id: crate::traces::trace_id(served.span, served.params),
            arguments_sha256: arguments.map(digest),
            parent: served.parent,
            ..Default::default()
        });
    }

    /// Records that `caller` was refused `item` (when known) outside any
    /// request: a task's call that is not run again.
    pub(super) fn refused(
        &self,
        caller: &Caller,
        method: Option<crate::protocol::Method>,
        item: Option<&Item<'_>>,
        error: &crate::protocol::RpcError,
    ) {
        let outcome = Outcome::failed(error);
        self.record(&Entry {
            event: "refused",
            principal: caller.principal.as_deref(),
            tenant: tenant_of(&caller.tenant),
            method: method.map(crate::protocol::Method::as_str),
            plugin: item.map(Item::plugin),
            target: item.map(|i| crate::text::head(i.name(), MAX_TARGET_BYTES)),
            outcome: outcome.label,
            code: outcome.code,
            reason: Some(crate::text::head(&error.message, MAX_REASON_BYTES)),
            rerun: true,
            ..Default::default()
        });
    }

    /// Records a task's call run again here (`tool` of `plugin`, the
    /// plugin's own name) for `caller`, as it starts (it goes on as the
    /// task; its end is the task's status).
    pub(super) fn rerun(&self, caller: &Caller, plugin: &str, tool: &str, outcome: Outcome) {
        self.record(&Entry {
            event: "call",
            principal: caller.principal.as_deref(),
            tenant: tenant_of(&caller.tenant),
            method: Some(crate::protocol::Method::CallTool.as_str()),
            plugin: Some(plugin),
            target: Some(crate::text::head(tool, MAX_TARGET_BYTES)),
            outcome: outcome.label,
            code: outcome.code,
            rerun: true,
            ..Default::default()
        });
    }
}

/// A tenant's name for a line: none for the local tenant, else at most
/// 256 bytes of it.
pub(super) fn tenant_of(tenant: &crate::tenant::Tenant) -> Option<&str> {
    (tenant.name() != crate::tenant::Tenant::LOCAL).then(|| crate::text::head(tenant.name(), 256))
}

/// The most bytes of a refusal's reason a line keeps.
const MAX_REASON_BYTES: usize = 512;

/// The most bytes of a name or URI a client sent that a line keeps.
const MAX_TARGET_BYTES: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_json_rotated_by_size_and_never_hold_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let section = AuditSection {
            file: Some(path.clone()),
            max_file_mb: 1,
            keep_files: 2,
            queue: 100_000,
        };
        let audit = Audit::open(&section).unwrap().unwrap();
        let arguments = json!({ "password": "hunter2" });
        let target = "x".repeat(1000);
        for _ in 0..3000 {
            audit.record(&Entry {
                event: "call",
                principal: Some("jwt:https://idp#ada"),
                method: Some("tools/call"),
                plugin: Some("files"),
                target: Some(&target),
                outcome: "ok",
                duration_ms: Some(1.5),
                arguments_sha256: Some(digest(&arguments)),
                ..Entry::default()
            });
        }
        drop(audit);
        // The writer ends once the queue is drained; until then it may be
        // between the renames of a rotation. Wait until the file and both
        // rotated ones are there, the same from one look to the next.
        let rotated = |n| PathBuf::from(format!("{}.{n}", path.display()));
        let files = || {
            [path.clone(), rotated(1), rotated(2), rotated(3)]
                .map(|p| std::fs::metadata(p).map(|m| m.len()).ok())
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut total = 0;
        let mut before = files();
        while std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            let now = files();
            total = [path.clone(), rotated(1), rotated(2)]
                .iter()
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .map(|text| text.lines().count())
                .sum::<usize>();
            let three = now[..3].iter().all(Option::is_some);
            if total >= 2000 && three && now == before && now == files() {
                break;
            }
            before = now;
        }
        assert!(rotated(2).exists() && !rotated(3).exists());
        assert!(std::fs::metadata(&path).unwrap().len() <= 1 << 20);
        assert!(total >= 2000, "{total}");
        let text = std::fs::read_to_string(rotated(1)).unwrap();
        assert!(!text.contains("hunter2"));
        let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(line["event"], "call");
        assert_eq!(line["arguments_sha256"], digest(&arguments));
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
    }
}
