//! Keeping the plugins a config names by OCI reference pulled: at start,
//! and a tag again now and then.

use super::signature::Verdict;
use super::{pull, Logins, PullLimits, Trust};
use oci_client::Reference;
use std::path::PathBuf;
use std::time::Duration;

/// How [`follow`] pulls.
#[derive(Debug, Clone)]
pub struct Following {
    /// The store of pulled components, by digest.
    pub store: PathBuf,
    /// The plugin folder.
    pub into: PathBuf,
    /// What a pull reads and takes at most.
    pub limits: PullLimits,
    /// How often a tag is asked again (`None`: only at start).
    pub every: Option<Duration>,
    /// The registry logins.
    pub logins: Logins,
}

/// Pulls each of `sources` (plugin name, reference) into the plugin
/// folder now, and those named by tag again every `every`, for as long as
/// the host runs. Each source is pulled on its own, each pull within the
/// deadline: a slow or hostile registry delays no other source. A pull
/// that fails changes nothing (the version in the folder, if any, keeps
/// serving) and is logged; a moved tag replaces the plugin's file, which
/// the folder's watcher reloads. The end of each source's first pull,
/// whatever it came to, is told on `first`: the source's name, and the
/// file it wrote when it changed the folder (a channel with room for one
/// message per source).
pub async fn follow(
    sources: Vec<(String, Reference, Trust)>,
    how: Following,
    first: tokio::sync::mpsc::Sender<(String, Option<PathBuf>)>,
) {
    let mut each = tokio::task::JoinSet::new();
    for (name, reference, trust) in sources {
        each.spawn(follow_one(
            name,
            reference,
            trust,
            how.clone(),
            first.clone(),
        ));
    }
    drop(first);
    while each.join_next().await.is_some() {}
}

/// [`follow`] of one source.
async fn follow_one(
    name: String,
    reference: Reference,
    trust: Trust,
    how: Following,
    first: tokio::sync::mpsc::Sender<(String, Option<PathBuf>)>,
) {
    let mut first = Some(first);
    let Following {
        store,
        into,
        limits,
        every,
        logins,
    } = &how;
    loop {
        let outcome = pull(&reference, &name, store, into, limits, &trust, logins).await;
        if let Some(first) = first.take() {
            let written = outcome.as_ref().ok().filter(|p| p.changed);
            // Never blocks: the channel has room for every source's one message.
            let _ = first.try_send((name.clone(), written.map(|p| p.file.clone())));
        }
        match outcome {
            Ok(pulled) if pulled.changed => {
                let signature = match &pulled.signature {
                    Some(Verdict::Verified(signed)) => format!("verified with {signed}"),
                    Some(_) => "none".to_owned(),
                    None => "not checked".to_owned(),
                };
                tracing::info!(plugin = %name, %reference, digest = %pulled.digest, %signature, "pulled")
            }
            Ok(_) => tracing::debug!(plugin = %name, %reference, "unchanged"),
            Err(e) => tracing::warn!(
                plugin = %name,
                "pulling {reference} failed; the plugin's file is left as it was: {e:#}"
            ),
        }
        // A digest never moves.
        let Some(every) = every.filter(|_| reference.digest().is_none()) else {
            return;
        };
        tokio::time::sleep(every).await;
    }
}
