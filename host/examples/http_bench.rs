//! Benchmark helpers for scripts/bench-http.py (not part of the product):
//!
//!     http_bench echo ADDR
//!         a bare axum endpoint that answers a POSTed JSON-RPC request with
//!         a JSON-RPC result echoing its params: the floor for any MCP server
//!         on the same stack.
//!     http_bench load URL BODY SECONDS CONNECTIONS [HEADER: VALUE]...
//!         POSTs BODY over CONNECTIONS keep-alive connections for SECONDS
//!         and prints `requests errors` when done.

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

async fn echo(Json(request): Json<Value>) -> Json<Value> {
    Json(json!({ "jsonrpc": "2.0", "id": request["id"], "result": request["params"] }))
}

/// One keep-alive connection sending the same request until `stop`.
async fn hammer(
    authority: String,
    request: Arc<Vec<u8>>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let stream = TcpStream::connect(&authority).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut line = String::new();
    let mut body = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        write.write_all(&request).await?;
        let mut length = 0usize;
        let mut status_ok = false;
        let mut first = true;
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            if first {
                status_ok = line.starts_with("HTTP/1.1 200");
                first = false;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        body.resize(length, 0);
        read.read_exact(&mut body).await?;
        if status_ok && !body.windows(8).any(|w| w == b"\"error\":") {
            done.fetch_add(1, Ordering::Relaxed);
        } else {
            errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("echo") => {
            let listener = tokio::net::TcpListener::bind(&args[1]).await?;
            println!("http://{}/mcp", listener.local_addr()?);
            axum::serve(listener, Router::new().route("/mcp", post(echo))).await
        }
        Some("load") => {
            let url = url::Url::parse(&args[1]).expect("a URL");
            let authority = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
            let body = std::fs::read(&args[2])?;
            let seconds: u64 = args[3].parse().expect("seconds");
            let connections: usize = args[4].parse().expect("connections");
            let mut request = format!(
                "POST {} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
                url.path(),
                body.len()
            );
            for header in &args[5..] {
                request.push_str(header);
                request.push_str("\r\n");
            }
            request.push_str("\r\n");
            let mut request = request.into_bytes();
            request.extend_from_slice(&body);
            let request = Arc::new(request);
            let stop = Arc::new(AtomicBool::new(false));
            let done = Arc::new(AtomicU64::new(0));
            let errors = Arc::new(AtomicU64::new(0));
            let tasks: Vec<_> = (0..connections)
                .map(|_| {
                    tokio::spawn(hammer(
                        authority.clone(),
                        request.clone(),
                        stop.clone(),
                        done.clone(),
                        errors.clone(),
                    ))
                })
                .collect();
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            stop.store(true, Ordering::Relaxed);
            for task in tasks {
                let _ = task.await;
            }
            println!(
                "{} {}",
                done.load(Ordering::Relaxed),
                errors.load(Ordering::Relaxed)
            );
            Ok(())
        }
        _ => {
            eprintln!(
                "usage: http_bench echo ADDR | load URL BODY SECONDS CONNECTIONS [HEADER]..."
            );
            std::process::exit(2)
        }
    }
}
