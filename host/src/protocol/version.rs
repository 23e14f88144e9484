//! Protocol revisions and version negotiation.

/// Revisions with the `initialize` handshake, oldest first.
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Stateless revisions, with the version in every request's `_meta`.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// The newest handshake revision.
pub const LATEST_LEGACY: &str = "2025-11-25";

/// The newest stateless revision.
pub const LATEST_MODERN: &str = "2026-07-28";

/// Whether `version` is a supported handshake revision.
pub fn is_legacy(version: &str) -> bool {
    LEGACY_VERSIONS.contains(&version)
}

/// Whether `version` is a supported stateless revision.
pub fn is_modern(version: &str) -> bool {
    MODERN_VERSIONS.contains(&version)
}

/// The revision to answer an `initialize` with: the client's when we speak
/// it, otherwise our newest handshake revision (the client then decides).
pub fn negotiate_legacy(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST_LEGACY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions_and_falls_back_to_latest() {
        assert_eq!(negotiate_legacy("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate_legacy("2024-11-05"), "2024-11-05");
        assert_eq!(negotiate_legacy("1999-01-01"), LATEST_LEGACY);
        assert_eq!(negotiate_legacy("2026-07-28"), LATEST_LEGACY);
        assert!(is_modern("2026-07-28") && !is_legacy("2026-07-28"));
    }
}
