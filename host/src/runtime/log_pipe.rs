//! A plugin's stdout and stderr: lines go to the host log, never to the
//! host's own stdio (which may be the MCP transport).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// The most bytes of one line kept; the rest of the line is dropped.
const MAX_LINE: usize = 4096;

/// A line-buffered sink that logs each line with the plugin's name.
#[derive(Clone)]
pub struct LogPipe {
    plugin: Arc<str>,
    stream: &'static str,
    line: Arc<Mutex<Vec<u8>>>,
}

impl LogPipe {
    pub fn new(plugin: Arc<str>, stream: &'static str) -> Self {
        LogPipe {
            plugin,
            stream,
            line: Arc::default(),
        }
    }

    fn emit(&self, line: &[u8]) {
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

impl AsyncWrite for LogPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
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
}
