//! A hostile plugin for the host's sandbox tests: each tool tries one way
//! out (files outside its roots, writes to a read-only root, variables it
//! was not granted, sockets) or one way to exhaust the host (memory,
//! stack, a huge result). Every tool reports what happened; `Err` means the
//! attempt failed. Never load it in production.

use std::io::{Read, Write};
use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Path {
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct Write_ {
    path: String,
    content: String,
}

#[derive(Deserialize, JsonSchema)]
struct Two {
    from: String,
    to: String,
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Address {
    address: String,
}

#[derive(Deserialize, JsonSchema)]
struct Url {
    /// `http://host[:port]/path`
    url: String,
}

#[derive(Deserialize, JsonSchema)]
struct Hold {
    /// A lock file in a writable root.
    path: String,
    /// How long to hold it.
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Size {
    megabytes: usize,
}

#[derive(Deserialize, JsonSchema)]
struct Count {
    count: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Lines {
    count: u64,
    /// The size of each line.
    kb: usize,
}

#[derive(Deserialize, JsonSchema)]
struct Uri {
    uri: String,
}

type Outcome = Result<String, String>;

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn read(p: Path) -> Outcome {
    let mut text = String::new();
    std::fs::File::open(&p.path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(fail)?;
    Ok(text)
}

fn write(w: Write_) -> Outcome {
    std::fs::File::create(&w.path)
        .and_then(|mut f| f.write_all(w.content.as_bytes()))
        .map_err(fail)?;
    Ok(format!("wrote {}", w.path))
}

fn list(p: Path) -> Outcome {
    let mut names: Vec<String> = std::fs::read_dir(&p.path)
        .map_err(fail)?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    Ok(names.join("\n"))
}

/// A GET through `wasi:http`: "<status> <body>", or why it failed.
fn http_get(u: Url) -> Outcome {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};
    let rest = u.url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let request = OutgoingRequest::new(Fields::new());
    request.set_method(&Method::Get).map_err(|()| "method")?;
    request
        .set_scheme(Some(&Scheme::Http))
        .map_err(|()| "scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "authority")?;
    request
        .set_path_with_query(Some(&format!("/{path}")))
        .map_err(|()| "path")?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "response taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "body")?;
    let stream = body.stream().map_err(|()| "stream")?;
    let mut bytes = Vec::new();
    while let Ok(chunk) = stream.blocking_read(64 << 10) {
        bytes.extend(chunk);
    }
    Ok(format!("{status} {}", String::from_utf8_lossy(&bytes)))
}

/// Deep recursion on the wasm call stack.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if depth == 0 {
        return 0;
    }
    recurse(std::hint::black_box(depth - 1)).wrapping_add(1)
}

/// Deep recursion with big frames, on the shadow stack in linear memory.
#[inline(never)]
fn recurse_frames(depth: u64, pad: [u64; 16]) -> u64 {
    let pad = std::hint::black_box(pad);
    if depth == 0 {
        return pad[0];
    }
    recurse_frames(depth - 1, pad).wrapping_add(pad[(depth % 16) as usize])
}

/// The marker `residue` leaves behind, stored XOR 0x5A so that the plain
/// marker never lies in the component's own data.
const MARKER_XOR: [u8; 16] = *b"\x08\x1f\x09\x13\x1e\x0f\x1f\x77\x17\x1b\x08\x11\x1f\x08\x7b\x7b";
/// In the component's data segment (its memory image).
static mut DATA: [u8; 4096] = [1; 4096];
/// Zero-initialised, past the data segment.
static mut BSS: [u8; 65536] = [0; 65536];

#[derive(Deserialize, JsonSchema)]
struct Residue {
    /// MiB of fresh heap (grown memory) to fill with the marker.
    megabytes: usize,
    /// Pages of another fresh heap block to mark, every other page, so
    /// that the pages written lie in this many separate runs.
    #[serde(default)]
    scattered: usize,
}

/// Counts the marker's copies in the whole linear memory (after growing it
/// by `megabytes`), then writes it into the data segment, the zeroed
/// statics, the heap (and `scattered` separate pages of it) and the stack.
/// A fresh instance per call finds none.
fn residue(r: Residue) -> Outcome {
    let mut heap: Vec<u8> = Vec::with_capacity(r.megabytes << 20);
    let size = core::arch::wasm32::memory_size(0) * 65536;
    let mut found = 0u32;
    let mut matched = 0;
    for address in 1..size {
        // SAFETY: every address below the memory's size is readable in wasm.
        let byte = unsafe { core::ptr::read_volatile(address as *const u8) };
        if byte ^ 0x5A == MARKER_XOR[matched] {
            matched += 1;
            if matched == MARKER_XOR.len() {
                found += 1;
                matched = 0;
            }
        } else {
            matched = usize::from(byte ^ 0x5A == MARKER_XOR[0]);
        }
    }
    let marker: Vec<u8> = MARKER_XOR.iter().map(|b| b ^ 0x5A).collect();
    let fill = |area: &mut [u8]| {
        for chunk in area.chunks_exact_mut(16) {
            chunk.copy_from_slice(&marker);
        }
    };
    heap.resize(r.megabytes << 20, 0);
    fill(&mut heap);
    let mut sparse = vec![0u8; r.scattered * 2 * 4096];
    for page in sparse.chunks_exact_mut(2 * 4096) {
        fill(&mut page[..16]);
    }
    std::hint::black_box(&sparse);
    let mut stack = [0u8; 32768];
    fill(&mut stack);
    std::hint::black_box(&stack);
    // SAFETY: one call at a time runs in an instance. (Through black_box,
    // or the optimiser drops statics that are written and never read.)
    unsafe {
        fill(&mut *std::hint::black_box(core::ptr::addr_of_mut!(DATA)));
        fill(&mut *std::hint::black_box(core::ptr::addr_of_mut!(BSS)));
    }
    std::hint::black_box(&heap);
    Ok(format!("found {found}"))
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool("read", "Reads a file", read)
        .tool(
            "write",
            "Creates or truncates a file and writes to it",
            write,
        )
        .tool("list", "Lists a folder", list)
        .tool("rename", "Renames a file", |t: Two| -> Outcome {
            std::fs::rename(&t.from, &t.to).map_err(fail)?;
            Ok("renamed".into())
        })
        .tool("delete", "Deletes a file", |p: Path| -> Outcome {
            std::fs::remove_file(&p.path).map_err(fail)?;
            Ok("deleted".into())
        })
        .tool("mkdir", "Creates a folder", |p: Path| -> Outcome {
            std::fs::create_dir(&p.path).map_err(fail)?;
            Ok("created".into())
        })
        .tool(
            "symlink",
            "Creates a symlink `to` pointing at `from`",
            |t: Two| -> Outcome {
                #[allow(deprecated)] // the one stable symlink call on wasi
                std::fs::soft_link(&t.from, &t.to).map_err(fail)?;
                Ok("linked".into())
            },
        )
        .tool(
            "env",
            "Reads one environment variable",
            |n: Name| -> Outcome { std::env::var(&n.name).map_err(fail) },
        )
        .tool(
            "env_all",
            "Lists every visible environment variable",
            |(): ()| {
                std::env::vars()
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>()
                    .join("\n")
            },
        )
        .tool("http_get", "Sends an HTTP GET through wasi:http", http_get)
        .tool(
            "hold",
            "Holds a lock file for a while; fails if another call holds it",
            |h: Hold| -> Outcome {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&h.path)
                    .map_err(|e| format!("another call holds the lock: {e}"))?;
                std::thread::sleep(std::time::Duration::from_millis(h.ms));
                std::fs::remove_file(&h.path).map_err(fail)?;
                Ok("held alone".into())
            },
        )
        .tool("tcp", "Opens a TCP connection", |a: Address| -> Outcome {
            std::net::TcpStream::connect(&a.address).map_err(fail)?;
            Ok("connected".into())
        })
        .tool("udp", "Sends a UDP datagram", |a: Address| -> Outcome {
            let socket = std::net::UdpSocket::bind("0.0.0.0:0").map_err(fail)?;
            socket.send_to(b"hello", &a.address).map_err(fail)?;
            Ok("sent".into())
        })
        .tool("resolve", "Looks up a host name", |n: Name| -> Outcome {
            use std::net::ToSocketAddrs;
            let found: Vec<_> = (n.name.as_str(), 80)
                .to_socket_addrs()
                .map_err(fail)?
                .collect();
            Ok(format!("{found:?}"))
        })
        .tool(
            "memory_bomb",
            "Allocates until something gives",
            |(): ()| {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 << 20]);
                    std::hint::black_box(&hoard);
                }
                #[allow(unreachable_code)]
                "never"
            },
        )
        .tool(
            "residue",
            "Finds what earlier calls left in memory, then leaves its own",
            residue,
        )
        .tool("recurse", "Recurses without end", |(): ()| {
            format!("{}", recurse(u64::MAX))
        })
        .tool(
            "recurse_frames",
            "Recurses without end, with big frames",
            |(): ()| format!("{}", recurse_frames(u64::MAX, [7; 16])),
        )
        .tool("huge", "Returns a result of the given size", |s: Size| {
            "x".repeat(s.megabytes << 20)
        })
        .tool(
            "many_items",
            "Returns `count` empty text items",
            |c: Count| -> Vec<Content> { (0..c.count).map(|_| text("")).collect() },
        )
        .tool(
            "progress_flood",
            "Reports progress `count` times",
            |c: Count| {
                for i in 0..c.count {
                    host::progress(i as f64, None, Some(""));
                }
                "sent"
            },
        )
        .tool("log_flood", "Logs `count` lines of `kb` KiB", |l: Lines| {
            let line = "x".repeat(l.kb << 10);
            for _ in 0..l.count {
                host::info(&line);
            }
            "logged"
        })
        .tool(
            "list_changed_flood",
            "Says its tool list changed `count` times",
            |c: Count| {
                for _ in 0..c.count {
                    host::list_changed(host::ListKind::Tools);
                }
                "sent"
            },
        )
        .tool("touch", "Says the resource at `uri` changed", |u: Uri| {
            host::resource_updated(&u.uri);
            "touched"
        })
        .tool(
            "empty_writes",
            "Writes nothing to stdout `count` times, then one line",
            |c: Count| {
                let out = wasi::cli::stdout::get_stdout();
                for _ in 0..c.count {
                    let _ = out.write(&[]);
                }
                let _ = out.blocking_write_and_flush(b"after the empty writes\n");
                "written"
            },
        )
        .add_tool(
            Tool::new("backtrack", |_: serde_json::Value| "validated")
                .description("Takes strings that a backtracking regex engine chokes on")
                .input_schema(serde_json::json!({
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "items": { "type": "string", "pattern": "^(a+)+$" }
                        }
                    }
                })),
        )
        .resource("evil://self", "self", "text/plain", |_| {
            Ok::<_, String>("evil")
        })
        .template(
            &format!("evil://bomb/{}", "{a}{b}".repeat(12)),
            "bomb",
            "text/plain",
            |_, _| Ok::<_, String>("matched"),
        )
}

export_plugin!(plugin);
