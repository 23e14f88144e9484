//! Protocol revisions and version negotiation.

use std::fmt;

/// A protocol revision this server speaks. Ordered by date, so features
/// are gated with comparisons (`revision >= Revision::V2025_11_25`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// 2024-11-05 (handshake).
    V2024_11_05,
    /// 2025-03-26 (handshake).
    V2025_03_26,
    /// 2025-06-18 (handshake).
    V2025_06_18,
    /// 2025-11-25 (handshake; tasks with the `task` param).
    V2025_11_25,
    /// 2026-07-28 (stateless: the version in every request's `_meta`).
    V2026_07_28,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The newest handshake revision.
    pub const LATEST_HANDSHAKE: Revision = Revision::V2025_11_25;

    /// The newest stateless revision.
    pub const LATEST_STATELESS: Revision = Revision::V2026_07_28;

    /// The revision named `text`, if this server speaks it.
    pub fn parse(text: &str) -> Option<Revision> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether requests carry the revision in `_meta` (no handshake).
    pub fn is_stateless(self) -> bool {
        self >= Revision::V2026_07_28
    }

    /// Whether a handshake session of this revision speaks the 2025-11-25
    /// tasks wire (the `task` param, `tasks/*`) and primes SSE streams.
    pub fn has_handshake_tasks(self) -> bool {
        self >= Revision::V2025_11_25 && !self.is_stateless()
    }

    /// Whether a tool call's invalid arguments are answered as a tool
    /// execution error (`isError`, the problem as text, for the model to
    /// correct its call) rather than a protocol error (2025-11-25 on).
    pub fn has_argument_tool_errors(self) -> bool {
        self >= Revision::V2025_11_25
    }

    /// Whether tool listings carry `outputSchema` (2025-06-18 on).
    pub fn has_output_schema(self) -> bool {
        self >= Revision::V2025_06_18
    }

    /// Every revision, newest first: what `supportedVersions` lists.
    pub fn newest_first() -> impl Iterator<Item = Revision> {
        Self::ALL.into_iter().rev()
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Revision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The revision to answer an `initialize` with: the client's when we speak
/// it as a handshake revision, otherwise our newest handshake revision
/// (the client then decides).
pub fn negotiate_handshake(requested: &str) -> Revision {
    Revision::parse(requested)
        .filter(|r| !r.is_stateless())
        .unwrap_or(Revision::LATEST_HANDSHAKE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions_and_falls_back_to_latest() {
        assert_eq!(negotiate_handshake("2025-03-26"), Revision::V2025_03_26);
        assert_eq!(negotiate_handshake("2024-11-05"), Revision::V2024_11_05);
        assert_eq!(
            negotiate_handshake("1999-01-01"),
            Revision::LATEST_HANDSHAKE
        );
        assert_eq!(
            negotiate_handshake("2026-07-28"),
            Revision::LATEST_HANDSHAKE
        );
        assert!(Revision::V2026_07_28.is_stateless() && !Revision::V2025_11_25.is_stateless());
    }

    #[test]
    fn revisions_are_ordered_by_date_and_round_trip_their_names() {
        for pair in Revision::ALL.windows(2) {
            assert!(pair[0] < pair[1] && pair[0].as_str() < pair[1].as_str());
        }
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
        assert_eq!(Revision::parse("2025-11-26"), None);
        assert!(!Revision::V2025_06_18.has_handshake_tasks());
        assert!(Revision::V2025_11_25.has_handshake_tasks());
        assert!(!Revision::V2026_07_28.has_handshake_tasks());
        assert!(!Revision::V2025_03_26.has_output_schema());
        assert!(Revision::V2025_06_18.has_output_schema());
    }
}
