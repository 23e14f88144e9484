//! The client's MCP roots (stateful revisions): asked with `roots/list`
//! once the session is initialized and again on
//! `notifications/roots/list_changed`. A plugin then sees only the granted
//! folders that lie inside them.

use super::Connection;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long the client has to answer `roots/list`.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Asks the client for its roots and stores them in the session. Until an
/// answer arrives the previous roots stay (none at first: nothing visible).
pub(super) async fn refresh(conn: Arc<Connection>) {
    let answer = conn.ask_client("roots/list", json!({}));
    let roots = match tokio::time::timeout(ANSWER_TIMEOUT, answer).await {
        Ok(Ok(Ok(result))) => folders(&result),
        Ok(Ok(Err(error))) => {
            return tracing::warn!("the client answered roots/list with an error: {error}")
        }
        Ok(Err(_)) => return,
        Err(_) => return tracing::warn!("the client did not answer roots/list in time"),
    };
    let roots = Arc::new(roots);
    conn.session().client_roots = Some(roots.clone());
    conn.persist().await;
    tracing::debug!(?roots, "client roots");
}

/// The local folders among a `roots/list` result's `file://` URIs.
fn folders(result: &Value) -> Vec<PathBuf> {
    let uris = result["roots"].as_array().into_iter().flatten();
    uris.filter_map(|root| root["uri"].as_str())
        .filter_map(|uri| url::Url::parse(uri).ok())
        .filter(|url| url.scheme() == "file")
        .filter_map(|url| url.to_file_path().ok())
        .map(|path| path.canonicalize().unwrap_or(path))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_folders() {
        let result = json!({ "roots": [
            { "uri": "file:///srv/my%20notes", "name": "notes" },
            { "uri": "https://example.com/x" },
            { "uri": "not a uri" },
        ]});
        assert_eq!(folders(&result), [PathBuf::from("/srv/my notes")]);
    }
}
