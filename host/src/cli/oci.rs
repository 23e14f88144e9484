//! `wasm-mcp push`, `sign` and `pull`: plugins to and from OCI registries.

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use wasm_mcp::config::Config;
use wasm_mcp::settings;

/// `wasm-mcp push`.
pub(crate) async fn push(
    file: PathBuf,
    reference: String,
    config_path: Option<PathBuf>,
) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let target = wasm_mcp::oci::reference(&reference)?;
    let logins = wasm_mcp::oci::Logins::of(&config);
    let digest = wasm_mcp::oci::push(
        &file,
        &target,
        config.server.max_plugin_mb << 20,
        &wasm_mcp::skills::Limits::of(&config),
        &logins,
    )
    .await?;
    println!("pushed {} as {reference} ({digest})", file.display());
    Ok(())
}

/// `wasm-mcp sign`.
pub(crate) async fn sign(
    reference: String,
    key: PathBuf,
    config_path: Option<PathBuf>,
) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let target = wasm_mcp::oci::reference(&reference)?;
    let key = tokio::task::spawn_blocking(move || wasm_mcp::oci::signature::SigningKey::read(&key))
        .await??;
    let logins = wasm_mcp::oci::Logins::of(&config);
    let caps = wasm_mcp::oci::PullLimits::of(&config).registry;
    let digest = wasm_mcp::oci::sign(&target, &key, &logins, caps).await?;
    println!("signed {reference} ({digest})");
    Ok(())
}

/// `wasm-mcp pull`.
pub(crate) async fn pull(
    reference: String,
    plugins: Option<PathBuf>,
    name: Option<String>,
    config_path: Option<PathBuf>,
) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let dir = plugins
        .or_else(|| config.server.plugins.clone())
        .context("no plugin folder: pass --plugins DIR or set server.plugins in the config")?;
    let source = wasm_mcp::oci::reference(&reference)?;
    let name = match name {
        Some(name) => name,
        None => source
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    let pulled = pull_into(&config, &source, &name, &dir).await?;
    println!(
        "pulled {reference} ({}) into {}",
        pulled.digest,
        pulled.file.display()
    );
    println!("{}", signature_line(&pulled.signature));
    Ok(())
}

/// Pulls `source` as plugin `name` into folder `into`, under the
/// signature policy, keeping it in the compile cache's store.
pub(crate) async fn pull_into(
    config: &Config,
    source: &oci_client::Reference,
    name: &str,
    into: &std::path::Path,
) -> Result<wasm_mcp::oci::Pulled> {
    let store = settings::runtime_config(config)
        .cache_dir
        .context(
            "the compile cache is off (server.cache_dir is \"\"): no store for pulled components",
        )?
        .join("oci");
    let trust = settings::trust(config, Some(name)).await?;
    let logins = wasm_mcp::oci::Logins::of(config);
    let limits = wasm_mcp::oci::PullLimits::of(config);
    wasm_mcp::oci::pull(source, name, &store, into, &limits, &trust, &logins).await
}

/// What a pull's signatures came to, as one line.
pub(crate) fn signature_line(verdict: &Option<wasm_mcp::oci::signature::Verdict>) -> String {
    match verdict {
        Some(wasm_mcp::oci::signature::Verdict::Verified(signed)) => {
            format!("signature: verified with {signed}")
        }
        Some(_) => "signature: none (the policy is if-present)".to_owned(),
        None => "signature: not checked (the policy is off)".to_owned(),
    }
}
