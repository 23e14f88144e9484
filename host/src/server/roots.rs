//! The client's MCP roots (stateful revisions): asked with `roots/list`
//! once the session is initialized and again on
//! `notifications/roots/list_changed` (`Connection::refresh_roots`). A
//! plugin then sees only the granted folders that lie inside them.

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// How long the client has to answer `roots/list`.
pub(super) const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The local folders among a `roots/list` result's `file://` URIs.
pub(super) fn folders(result: &Value) -> Vec<PathBuf> {
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
    use serde_json::json;

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
