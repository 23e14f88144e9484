//! How bytes reach the server: stdio (newline-delimited JSON-RPC).

pub mod stdio;
