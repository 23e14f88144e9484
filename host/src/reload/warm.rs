//! `wasm-mcp warm`: the plugins of a folder compiled into the compile cache
//! ahead of serving them.

use super::folder::{plugin_name, read_plugin, wasm_files};
use crate::runtime::{Grants, Runtime};
use anyhow::{Context as _, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// Compiles each `*.wasm` of `dir` (of at most `max_bytes`) by the
/// optimising compiler into `runtime`'s compile cache, one at a time (each
/// compile uses every core); what became of each file.
pub async fn warm(
    runtime: &Arc<Runtime>,
    dir: PathBuf,
    max_bytes: u64,
) -> Result<Vec<(PathBuf, Result<()>)>> {
    let files = tokio::task::spawn_blocking(move || wasm_files(&dir)).await??;
    let mut compiled = Vec::with_capacity(files.len());
    for path in files {
        let outcome = async {
            let name = plugin_name(&path)?;
            let (source, _, _) = read_plugin(&path, max_bytes, None)
                .await?
                .context("the file is gone")?;
            runtime.load(&name, source, Grants::default()).await?;
            Ok(())
        }
        .await;
        compiled.push((path, outcome));
    }
    Ok(compiled)
}
