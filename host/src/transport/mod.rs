//! How bytes reach the server: stdio (newline-delimited JSON-RPC) and
//! Streamable HTTP.

pub mod http;
#[cfg(test)]
mod method_tests;
pub mod std_pipes;
pub mod stdio;
