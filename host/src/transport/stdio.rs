//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//! Nothing else is ever written to stdout; logs go to stderr.

use crate::server::{Connection, Outbox, Server, ServerEvent};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line accepted, in bytes; a longer one is answered with a
/// parse error and skipped.
pub const MAX_LINE: usize = 16 << 20;

/// Serves one client over `input`/`output` until `input` closes and every
/// request read has its answer (see [`serve_lines`]).
pub async fn serve<R, W>(
    server: Arc<Server>,
    input: R,
    mut output: W,
    grace: Duration,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut outgoing) = Outbox::new();
    let writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            let mut line = message.into_text().into_bytes();
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let served = serve_lines(server, input, out, grace).await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    served
}

/// Serves one client whose messages come from `input` until it closes;
/// what the server sends goes to `out`, whose receiver the caller writes
/// out, one message per line. When `input` ends, every request read gets
/// its answer: those still running after `grace` are cancelled and
/// answered with an error saying so.
pub async fn serve_lines<R>(
    server: Arc<Server>,
    input: R,
    out: Outbox,
    grace: Duration,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
{
    let conn = Connection::new(
        server.clone(),
        out.clone(),
        crate::server::Caller::operator(),
    );
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut limited = AsyncReadExt::take(&mut reader, MAX_LINE as u64 + 1);
        let read = tokio::select! {
            read = limited.read_until(b'\n', &mut line) => read?,
            () = out.closed() => {
                // The client stopped reading: its answers cannot be delivered.
                tracing::error!("the client does not read stdout; closing the connection");
                server.publish(ServerEvent::Shutdown);
                conn.close();
                return Ok(());
            }
        };
        if read == 0 {
            break;
        }
        if line.len() > MAX_LINE && !line.ends_with(b"\n") {
            out.send(
                crate::protocol::RpcError::new(
                    crate::protocol::ErrorCode::ParseError,
                    "message too long",
                )
                .response(&serde_json::Value::Null),
            );
            // Skip the rest of the over-long line.
            loop {
                line.clear();
                let n = AsyncReadExt::take(&mut reader, MAX_LINE as u64)
                    .read_until(b'\n', &mut line)
                    .await?;
                if n == 0 || line.ends_with(b"\n") {
                    break;
                }
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if !text.is_empty() {
            crate::server::handle_text(&conn, text);
        }
    }
    // Listening streams end now; the requests read still get answers.
    server.publish(ServerEvent::Shutdown);
    conn.finish(grace).await;
    Ok(())
}
