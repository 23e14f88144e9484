//! Registry credentials from docker's `config.json` (`$DOCKER_CONFIG`, else
//! `~/.docker`): the registry's credential helper (`credHelpers`, else
//! `credsStore`: the program `docker-credential-NAME`, asked with `get`),
//! else its `auths` entry. A helper gets [`HELPER_TIMEOUT`] and
//! [`MAX_HELPER_OUTPUT`] bytes to answer; one that fails, or knows nothing
//! of the registry, leaves the `auths` entry to answer.

use anyhow::{Context as _, Result};
use oci_client::secrets::RegistryAuth;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// How long a credential helper may take.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a credential helper's answer read.
pub const MAX_HELPER_OUTPUT: u64 = 64 << 10;
/// The largest `config.json` read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The credentials docker keeps for `registry`, or none.
pub async fn credentials(registry: &str) -> Result<RegistryAuth> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".docker")));
    let Some(file) = dir.map(|d| d.join("config.json")) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let path = file.clone();
    let text = match tokio::task::spawn_blocking(move || {
        crate::files::read_regular(&path, MAX_CONFIG_BYTES)
    })
    .await?
    {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let config: serde_json::Value = serde_json::from_slice(&text)
        .with_context(|| format!("reading {}: not JSON", file.display()))?;
    if let Some(helper) = helper_for(&config, registry) {
        match ask_helper(&helper, registry).await {
            Ok(Some(auth)) => return Ok(auth),
            Ok(None) => {}
            Err(e) => tracing::warn!(
                registry,
                "docker-credential-{helper} gave no credentials: {e:#}"
            ),
        }
    }
    auths_entry(&config, registry).with_context(|| format!("reading {}", file.display()))
}

/// The helper named for `registry`: its `credHelpers` entry, else
/// `credsStore`. Only a plain name (it becomes part of a program's name).
fn helper_for(config: &serde_json::Value, registry: &str) -> Option<String> {
    let name = config["credHelpers"][registry]
        .as_str()
        .or_else(|| config["credsStore"].as_str())?;
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    plain.then(|| name.to_owned())
}

/// Asks `docker-credential-HELPER get` for `registry` (the credential
/// helpers' protocol: the server on stdin, `{"Username", "Secret"}` on
/// stdout). `None`: the helper has none for it.
async fn ask_helper(helper: &str, registry: &str) -> Result<Option<RegistryAuth>> {
    let program = format!("docker-credential-{helper}");
    let mut child = tokio::process::Command::new(&program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut stdout = child.stdout.take().context("no stdout")?;
    let talk = async {
        stdin.write_all(registry.as_bytes()).await?;
        drop(stdin);
        let mut answer = Vec::new();
        (&mut stdout)
            .take(MAX_HELPER_OUTPUT + 1)
            .read_to_end(&mut answer)
            .await?;
        let status = child.wait().await?;
        anyhow::Ok((status, answer))
    };
    let (status, answer) = tokio::time::timeout(HELPER_TIMEOUT, talk)
        .await
        .with_context(|| format!("{program} did not answer within {HELPER_TIMEOUT:?}"))??;
    anyhow::ensure!(
        answer.len() as u64 <= MAX_HELPER_OUTPUT,
        "{program} answered more than {MAX_HELPER_OUTPUT} bytes"
    );
    if !status.success() {
        // "credentials not found" is a failure too: nothing to use.
        return Ok(None);
    }
    let answer: serde_json::Value =
        serde_json::from_slice(&answer).with_context(|| format!("{program}: not JSON"))?;
    match (answer["Username"].as_str(), answer["Secret"].as_str()) {
        (Some(user), Some(secret)) if !secret.is_empty() => Ok(Some(RegistryAuth::Basic(
            user.to_owned(),
            secret.to_owned(),
        ))),
        _ => Ok(None),
    }
}

/// The Basic credentials of `registry`'s `auths` entry.
fn auths_entry(config: &serde_json::Value, registry: &str) -> Result<RegistryAuth> {
    use base64::Engine as _;
    let Some(auth) = config["auths"][registry]["auth"].as_str() else {
        return Ok(RegistryAuth::Anonymous);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .context("the auth entry is not base64 of user:password")?;
    let (user, password) = decoded
        .split_once(':')
        .context("the auth entry is not user:password")?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auths_entries_and_helper_names() {
        let config: serde_json::Value = serde_json::from_str(
            r#"{"auths": {"r.example:5000": {"auth": "dXNlcjpwYXNzOndvcmQ="}},
                "credsStore": "desktop", "credHelpers": {"ghcr.io": "gh", "bad": "../x"}}"#,
        )
        .unwrap();
        match auths_entry(&config, "r.example:5000").unwrap() {
            RegistryAuth::Basic(user, password) => {
                assert_eq!((user.as_str(), password.as_str()), ("user", "pass:word"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            auths_entry(&config, "elsewhere").unwrap(),
            RegistryAuth::Anonymous
        ));
        assert_eq!(helper_for(&config, "ghcr.io").as_deref(), Some("gh"));
        assert_eq!(
            helper_for(&config, "r.example:5000").as_deref(),
            Some("desktop")
        );
        assert_eq!(helper_for(&config, "bad"), None);
    }
}
