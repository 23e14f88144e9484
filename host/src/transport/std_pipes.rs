//! The process's stdin and stdout, each served by a thread of its own.
//!
//! tokio's `stdin()` and `stdout()` hand every read and every write to the
//! shared blocking pool: a round trip over stdio woke three or four pool
//! threads, which contended for the pool's lock (~24 futex calls per call).
//! Here one thread reads stdin and hands its data over through a small
//! bounded channel, and one takes the server's messages straight from the
//! connection's outbox (bounded by the outbox) and writes them to stdout.

use crate::server::OutboxReceiver;
use std::io::{Read, Write};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// The most stdin read in one go, in bytes.
const READ_CHUNK: usize = 64 << 10;
/// Chunks read ahead of the server (so at most 4 × 64 KiB buffered).
const READ_AHEAD: usize = 4;

/// stdin as an [`AsyncRead`], and a way to wait until everything the
/// outbox held has reached stdout.
pub struct StdPipes {
    /// What stdin brings.
    pub input: ThreadReader,
    /// Ends when every sender of the outbox is gone and all it held is
    /// written (or stdout closed).
    pub written: WriterDone,
}

/// Starts the two threads: stdout gets what `outgoing` receives, one
/// message per line. Call it inside the runtime.
pub fn std_pipes(outgoing: OutboxReceiver) -> std::io::Result<StdPipes> {
    let (chunks, received) = mpsc::channel(READ_AHEAD);
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || read_stdin(chunks))?;
    let runtime = tokio::runtime::Handle::current();
    // One message ever: the thread is done.
    let (done, written) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || {
            write_stdout(&runtime, outgoing);
            let _ = done.send(());
        })?;
    Ok(StdPipes {
        input: ThreadReader {
            chunks: received,
            current: Vec::new(),
            at: 0,
        },
        written: WriterDone(written),
    })
}

fn read_stdin(chunks: mpsc::Sender<std::io::Result<Vec<u8>>>) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let chunk = match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => Ok(buf[..n].to_vec()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = chunk.is_err();
        // The server stopped reading, or the read failed: nothing more to do.
        if chunks.blocking_send(chunk).is_err() || failed {
            return;
        }
    }
}

fn write_stdout(runtime: &tokio::runtime::Handle, mut outgoing: OutboxReceiver) {
    let mut stdout = std::io::stdout().lock();
    while let Some(message) = runtime.block_on(outgoing.recv()) {
        let mut line = message.into_text().into_bytes();
        line.push(b'\n');
        if stdout
            .write_all(&line)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            // The reader went away; dropping `outgoing` tells the server.
            return;
        }
    }
}

/// stdin, read by its thread.
pub struct ThreadReader {
    chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
}

impl AsyncRead for ThreadReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at == this.current.len() {
            match ready!(this.chunks.poll_recv(cx)) {
                None => return Poll::Ready(Ok(())),
                Some(Err(e)) => return Poll::Ready(Err(e)),
                Some(Ok(chunk)) => {
                    this.current = chunk;
                    this.at = 0;
                }
            }
        }
        let n = buf.remaining().min(this.current.len() - this.at);
        buf.put_slice(&this.current[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// Ends when the stdout thread has written all it was given and stopped.
pub struct WriterDone(std::sync::mpsc::Receiver<()>);

impl WriterDone {
    /// Waits (blocking) at most `timeout` for the stdout thread to finish.
    pub fn wait(self, timeout: Duration) {
        let _ = self.0.recv_timeout(timeout);
    }
}
