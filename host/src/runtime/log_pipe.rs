//! A plugin's stdout and stderr: lines go to the host log, never to the
//! host's own stdio (which may be the MCP transport).
//!
//! Writes are taken synchronously into one line buffer (no queue, so even
//! a flood of empty writes costs nothing), a line is capped at
//! [`MAX_LINE`] bytes, and lines count against the call's notification
//! quota: beyond it they are dropped and counted.

use super::quota::Quota;
use bytes::Bytes;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The most bytes of one line kept; the rest of the line is dropped.
const MAX_LINE: usize = 4096;

/// The most bytes one write may carry.
const WRITE_PERMIT: usize = 64 << 10;

/// A line-buffered sink that logs each line with the plugin's name.
#[derive(Clone)]
pub struct LogPipe {
    plugin: Arc<str>,
    stream: &'static str,
    line: Arc<Mutex<Vec<u8>>>,
    quota: Arc<Quota>,
}

impl LogPipe {
    pub fn new(plugin: Arc<str>, stream: &'static str, quota: Arc<Quota>) -> Self {
        LogPipe {
            plugin,
            stream,
            line: Arc::default(),
            quota,
        }
    }

    fn emit(&self, line: &[u8]) {
        if !self.quota.take() {
            return;
        }
        let text = String::from_utf8_lossy(line);
        tracing::info!(plugin = %self.plugin, stream = self.stream, "{}", text.trim_end());
    }

    fn write_bytes(&self, mut buf: &[u8]) {
        let mut line = self.line.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let room = MAX_LINE.saturating_sub(line.len());
            line.extend_from_slice(&buf[..nl.min(room)]);
            self.emit(&line);
            line.clear();
            buf = &buf[nl + 1..];
        }
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&buf[..buf.len().min(room)]);
    }
}

impl Drop for LogPipe {
    fn drop(&mut self) {
        // The last clone flushes an unterminated line.
        if Arc::strong_count(&self.line) == 1 {
            let line = self.line.lock().unwrap_or_else(|p| p.into_inner());
            if !line.is_empty() {
                self.emit(&line);
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
