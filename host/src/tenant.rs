//! Tenants: whose plugin data a call reaches.
//!
//! A caller's tenant is named by a token claim (`[tenancy] claim`, `sub`
//! by default: each principal its own tenant); over stdio and
//! unauthenticated HTTP there is one tenant, [`Tenant::LOCAL`]. A tenant
//! has its own folder in each `{tenant}` root and its own namespace in
//! the key-value store of each plugin granted one.
//!
//! Its name comes from a token, so it is hostile until encoded: the
//! folder and namespace key ([`Tenant::key`]) is the name with every byte
//! other than `a-z`, `0-9`, `_` and `-` written as `%XX` (upper-case hex),
//! or, when that is longer than [`MAX_KEY`] bytes, `~` and the SHA-256 of
//! the name in hex. So a key is never empty, `.` or `..`, holds no `/`,
//! NUL or control character, and fits in a file name; two names never
//! share a key (the encoding is one-to-one, a hashed key starts with `~`,
//! which no encoded name holds, and it stays one-to-one on a file system
//! that ignores case: letters outside hex escapes are all lower-case).

use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The longest key written out in full; longer ones are hashed.
pub const MAX_KEY: usize = 200;

/// A caller's tenant: its name as the claim gave it, and its key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenant {
    name: Arc<str>,
    key: Arc<str>,
}

impl Tenant {
    /// The one tenant of stdio and unauthenticated HTTP.
    pub const LOCAL: &'static str = "local";

    /// The tenant named `name`; `None` for an empty name.
    pub fn new(name: &str) -> Option<Tenant> {
        if name.is_empty() {
            return None;
        }
        Some(Tenant {
            name: Arc::from(name),
            key: Arc::from(encode(name)),
        })
    }

    /// The tenant of stdio and unauthenticated HTTP.
    pub fn local() -> Tenant {
        static LOCAL: std::sync::LazyLock<Tenant> =
            std::sync::LazyLock::new(|| Tenant::new(Tenant::LOCAL).expect("not empty"));
        LOCAL.clone()
    }

    /// Its name, as the claim gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its folder name and store namespace (see the module's docs).
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// Its name, cut short for a log line.
    pub fn display(&self) -> String {
        crate::text::head(&self.name, 80).to_owned()
    }
}

impl std::fmt::Display for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

/// The key of tenant `name` (see the module's docs).
pub fn encode(name: &str) -> String {
    let mut key = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => key.push(byte as char),
            other => key.push_str(&format!("%{other:02X}")),
        }
        if key.len() > MAX_KEY {
            let digest = Sha256::digest(name.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            return format!("~{hex}");
        }
    }
    key
}

/// The name a key was encoded from; `None` for a hashed key (or text that
/// is no key).
pub fn decode(key: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(key.len());
    let mut rest = key.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        match first {
            b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => {
                bytes.push(first);
                rest = tail;
            }
            b'%' if tail.len() >= 2 => {
                let hex = std::str::from_utf8(&tail[..2]).ok()?;
                if hex.bytes().any(|b| b.is_ascii_lowercase()) {
                    return None;
                }
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &tail[2..];
            }
            _ => return None,
        }
    }
    let name = String::from_utf8(bytes).ok()?;
    (!name.is_empty() && encode(&name) == key).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_keep_their_letters_and_the_rest_is_escaped() {
        assert_eq!(encode("alice"), "alice");
        assert_eq!(encode("team-7_x"), "team-7_x");
        assert_eq!(encode("Alice"), "%41lice");
        assert_eq!(encode("../../x"), "%2E%2E%2F%2E%2E%2Fx");
        assert_eq!(encode("a/b"), "a%2Fb");
        assert_eq!(encode("a\0b"), "a%00b");
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn a_key_is_always_a_plain_file_name() {
        for name in [
            "..",
            ".",
            "/",
            "a/../../b",
            "\0",
            "\n\r\t",
            "~x",
            "%41",
            "ａdmin",
            &"x".repeat(10_000),
        ] {
            let key = encode(name);
            assert!(!key.is_empty() && key != "." && key != "..", "{name:?}");
            assert!(key.len() <= MAX_KEY.max(65), "{name:?}");
            assert!(
                key.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"%_-~".contains(&b)),
                "{name:?} -> {key:?}"
            );
        }
    }

    #[test]
    fn long_names_are_hashed_and_no_two_names_share_a_key() {
        let long = "x".repeat(10_000);
        assert!(encode(&long).starts_with('~'));
        assert_ne!(encode(&long), encode(&"x".repeat(10_001)));
        let names = ["a", "A", "%41", "%2541", "a b", "a%20b", "ａ", "~", "~a"];
        let keys: std::collections::BTreeSet<String> =
            names.iter().map(|n| encode(n).to_lowercase()).collect();
        // Distinct even with case ignored.
        assert_eq!(keys.len(), names.len());
    }

    #[test]
    fn keys_decode_to_their_names() {
        for name in ["alice", "Alice", "../../x", "a\0b", "ｔenant", "org:7"] {
            assert_eq!(decode(&encode(name)).as_deref(), Some(name));
        }
        assert_eq!(decode(&encode(&"x".repeat(300))), None);
        assert_eq!(decode("a%2fb"), None);
        assert_eq!(decode("A"), None);
        assert_eq!(decode(""), None);
        assert!(Tenant::new("").is_none());
        assert_eq!(Tenant::local().key().as_ref(), "local");
    }
}
