//! `wasm-mcp config check FILE` and `wasm-mcp config schema`.

use anyhow::{Context as _, Result};
use std::path::Path;
use wasm_mcp::config::{Config, Files};

/// Checks the config at `path` as `serve` would load it, and more (files
/// it names are there, the host's folders outside every root; with
/// `Files::Skip`, keys and values only), without starting anything.
/// With `plugins`, a plugin folder, each plugin is loaded (not served)
/// and what the config names that matches none of them is a problem too
/// (`config::unmatched`). Prints every problem, one per line, and
/// returns whether there were none.
pub(crate) fn check(path: &Path, files: Files, plugins: Option<&Path>) -> Result<bool> {
    let text = wasm_mcp::files::read_regular_text(path, wasm_mcp::files::MAX_CONFIG_BYTES)
        .with_context(|| format!("reading config {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let shown = path.display();
    let (problems, warnings, summary) = match Config::parse_with(&text, base, files) {
        Err(problems) => (problems, Vec::new(), None),
        Ok(config) => {
            let mut found = match files {
                Files::Open => config.reachable(),
                Files::Skip => Default::default(),
            };
            let configured = config.server.plugins.clone();
            if let (Some(dir), Files::Open) = (&configured, files) {
                if let Err(e) = wasm_mcp::settings::check_host_paths(&config, dir) {
                    found.problems.push(format!("{e:#}"));
                }
            }
            if let Some(dir) = plugins {
                let (offered, failed) = tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()?
                    .block_on(super::inspect::offered_in(dir.to_owned(), &config))
                    .with_context(|| format!("loading the plugins of {}", dir.display()))?;
                for (name, why) in &failed {
                    found.warnings.push(format!(
                        "plugin {name} did not load, so what the config names of it is not \
                         checked: {why}"
                    ));
                }
                let failed: Vec<&str> = failed.iter().map(|(name, _)| name.as_str()).collect();
                let unmatched =
                    wasm_mcp::config::unmatched::findings(&config, Some(&text), &offered);
                found.problems.extend(
                    unmatched
                        .into_iter()
                        .filter(|f| !f.plugin.as_deref().is_some_and(|p| failed.contains(&p)))
                        .map(|f| f.to_string()),
                );
            }
            let summary = format!(
                "{} plugin section(s), {} root(s), {}",
                config.plugins.len(),
                config.roots.len(),
                match &config.http.listen {
                    Some(listen) => format!("HTTP on {listen}"),
                    None => "stdio unless --http".to_owned(),
                }
            );
            (found.problems, found.warnings, Some(summary))
        }
    };
    for warning in &warnings {
        println!("{shown}: warning: {warning}");
    }
    for problem in &problems {
        println!("{shown}: {problem}");
    }
    match (problems.len(), summary) {
        (0, Some(summary)) => {
            println!("{shown}: ok ({summary})");
            Ok(true)
        }
        (n, _) => {
            println!("{shown}: {n} problem(s)");
            Ok(false)
        }
    }
}

/// The config file's JSON Schema (or with `manifest`, a plugin
/// manifest's), pretty-printed.
pub(crate) fn schema(manifest: bool) -> String {
    let schema = match manifest {
        true => wasm_mcp::config::schema::manifest_schema(),
        false => wasm_mcp::config::schema::schema(),
    };
    serde_json::to_string_pretty(&schema).expect("a JSON value prints") + "\n"
}
