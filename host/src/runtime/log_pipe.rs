//! A plugin's stdout and stderr: lines go to the host log, never to the
//! host's own stdio (which may be the MCP transport).
//!
//! Writes are taken synchronously into one line buffer (no queue, so even
//! a flood of empty writes costs nothing), a line is capped at
//! [`MAX_LINE`] bytes, and lines count against the call's notification
//! quota: beyond it they are dropped and counted. The last few lines are
//! kept (see [`Tail`]) so that when the call fails, its error can say what
//! the plugin wrote last: a panic message, an exception.

use super::quota::Quota;
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The most bytes of one line kept; the rest of the line is dropped.
const MAX_LINE: usize = 4096;

/// The most bytes one write may carry.
const WRITE_PERMIT: usize = 64 << 10;

/// The most bytes of the last lines kept for an error message.
pub(super) const TAIL_BYTES: usize = 1024;

/// The last lines written (at most [`TAIL_BYTES`] of them, the newest
/// kept), and the line being written.
#[derive(Default)]
pub(super) struct Tail {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
    line: Vec<u8>,
}

impl Tail {
    fn push(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line).trim_end().to_owned();
        // Advice to set an environment variable the client cannot set.
        if text.is_empty() || text.starts_with("note: run with `RUST_BACKTRACE=1`") {
            return;
        }
        self.bytes += text.len();
        self.lines.push_back(text);
        while self.bytes > TAIL_BYTES && self.lines.len() > 1 {
            let old = self.lines.pop_front().expect("more than one line");
            self.bytes -= old.len();
        }
    }

    /// What was written last, at most [`TAIL_BYTES`] (the newest kept);
    /// empty if nothing.
    pub(super) fn text(&self) -> String {
        let mut lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let pending = String::from_utf8_lossy(&self.line);
        if !pending.trim().is_empty() {
            lines.push(pending.trim_end());
        }
        let text = lines.join("\n");
        match text.len().checked_sub(TAIL_BYTES) {
            Some(cut) if cut > 0 => {
                let start = (cut..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(text.len());
                format!("…{}", &text[start..])
            }
            _ => text,
        }
    }
}

/// A line-buffered sink that logs each line with the plugin's name.
#[derive(Clone)]
pub(super) struct LogPipe {
    plugin: Arc<str>,
    stream: &'static str,
    tail: Arc<Mutex<Tail>>,
    quota: Arc<Quota>,
}

impl LogPipe {
    pub(super) fn new(plugin: Arc<str>, stream: &'static str, quota: Arc<Quota>) -> Self {
        LogPipe {
            plugin,
            stream,
            tail: Arc::default(),
            quota,
        }
    }

    /// The last lines written, readable while the pipe lives.
    pub(super) fn tail(&self) -> Weak<Mutex<Tail>> {
        Arc::downgrade(&self.tail)
    }

    fn emit(&self, line: &[u8]) {
        if !self.quota.take() {
            return;
        }
        let text = String::from_utf8_lossy(line);
        tracing::info!(plugin = %self.plugin, stream = self.stream, "{}", text.trim_end());
    }

    fn write_bytes(&self, mut buf: &[u8]) {
        let mut tail = self.tail.lock();
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let room = MAX_LINE.saturating_sub(tail.line.len());
            tail.line.extend_from_slice(&buf[..nl.min(room)]);
            let line = std::mem::take(&mut tail.line);
            self.emit(&line);
            tail.push(&line);
            buf = &buf[nl + 1..];
        }
        let room = MAX_LINE.saturating_sub(tail.line.len());
        tail.line.extend_from_slice(&buf[..buf.len().min(room)]);
    }
}

impl Drop for LogPipe {
    fn drop(&mut self) {
        // The last clone flushes an unterminated line.
        if Arc::strong_count(&self.tail) == 1 {
            let mut tail = self.tail.lock();
            let line = std::mem::take(&mut tail.line);
            if !line.is_empty() {
                self.emit(&line);
                tail.push(&line);
            }
        }
    }
}

#[async_trait::async_trait]
impl Pollable for LogPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for LogPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

impl AsyncWrite for LogPipe {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogPipe {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_newest_lines_within_its_bound() {
        let pipe = LogPipe::new("p".into(), "stderr", Arc::new(Quota::new(1)));
        let tail = pipe.tail();
        pipe.write_bytes(b"first\n");
        for _ in 0..100 {
            pipe.write_bytes(b"filler line of some length\n");
        }
        pipe.write_bytes(b"panicked at src/lib.rs:1:1:\nthe message");
        let text = tail.upgrade().unwrap().lock().text();
        assert!(text.len() <= TAIL_BYTES + 4, "{}", text.len());
        assert!(
            text.ends_with("panicked at src/lib.rs:1:1:\nthe message"),
            "{text}"
        );
        assert!(!text.contains("first"));
        drop(pipe);
        assert!(tail.upgrade().is_none());
    }
}
