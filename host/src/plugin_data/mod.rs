//! Plugins' own data: the stores behind `wasi:keyvalue` (SQLite on one
//! machine; PostgreSQL, shared by replicas, in `crate::cluster`) and each
//! tenant's folders, for `wasm-mcp tenant`.
