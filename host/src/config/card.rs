//! What the server card says of the host (`[server] name`, `description`,
//! `website`, `icons`) and the checks that keep it valid and small: a card
//! that breaks the Server Card schema, or grows without bound, is refused
//! when the config is read.

use super::Config;
use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The card's name by default.
pub const DEFAULT_NAME: &str = "local.wasm-mcp/wasm-mcp";

/// The card's description by default.
pub const DEFAULT_DESCRIPTION: &str = "Sandboxed WebAssembly plugins served over MCP";

/// The longest name a card may have (the schema's bound).
pub const MAX_NAME: usize = 200;

/// The longest description a card may have, in characters (the schema's
/// bound).
pub const MAX_DESCRIPTION: usize = 100;

/// Icons a card lists, at most.
pub const MAX_ICONS: usize = 8;

/// The longest icon `src`, in bytes (a `data:` URI holds the image).
pub const MAX_ICON_SRC: usize = 64 << 10;

/// The longest `website` and icon `mime_type`, in bytes.
const MAX_SHORT: usize = 2048;

/// Sizes one icon lists, at most.
const MAX_SIZES: usize = 16;

/// The path of the server card of the endpoint at `path` (as the HTTP
/// transport serves it: the endpoint's URL, then `/server-card`).
pub fn card_path(path: &str) -> String {
    format!("{}/server-card", path.trim_end_matches('/'))
}

/// The card name of profile `profile` of a host named `name`: its name
/// then `-PROFILE` (a profile's name is letters, digits, `-` and `_`, all
/// allowed after the `/`).
pub fn profile_card_name(name: &str, profile: &str) -> String {
    format!("{name}-{profile}")
}

/// Whether `name` is a card name: `NAMESPACE/NAME` in reverse-DNS form
/// (`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`), 3 to 200 characters.
pub fn valid_name(name: &str) -> bool {
    let Some((namespace, server)) = name.split_once('/') else {
        return false;
    };
    (3..=MAX_NAME).contains(&name.len())
        && !namespace.is_empty()
        && !server.is_empty()
        && namespace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && server
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `[[server.icons]]`: an icon the server card shows.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IconSection {
    /// The image: an `https:` URL, or a `data:` URI holding it (at most
    /// 64 KiB).
    pub src: String,
    /// Its media type, such as `image/png` or `image/svg+xml`.
    pub mime_type: Option<String>,
    /// The sizes it fits: `WIDTHxHEIGHT` (`48x48`) or `any`.
    #[serde(default)]
    pub sizes: Vec<String>,
    /// The background it is drawn for: `light` or `dark` (any by default).
    pub theme: Option<IconTheme>,
}

/// The background an icon is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IconTheme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

impl IconTheme {
    /// Its name in the card.
    pub fn as_str(self) -> &'static str {
        match self {
            IconTheme::Light => "light",
            IconTheme::Dark => "dark",
        }
    }
}

/// `[server] name`, `description`, `website` and `icons`, and each
/// profile's card name: what the server card says, checked against the
/// Server Card schema and kept small.
pub(super) fn check(config: &Config) -> Result<()> {
    let server = &config.server;
    let mut problems = Vec::new();
    if !valid_name(&server.name) {
        problems.push(format!(
            "server.name {:?} is not a server card name: NAMESPACE/NAME in reverse-DNS form \
             (letters, digits, . and - before the /; letters, digits, ., _ and - after it; \
             3 to {MAX_NAME} characters), such as \"com.example/tools\"",
            crate::text::head(&server.name, 80)
        ));
    } else {
        for profile in config.profiles.keys() {
            let name = profile_card_name(&server.name, profile);
            if name.len() > MAX_NAME {
                problems.push(format!(
                    "profiles.{profile}: its server card name {:?} ([server] name, then \
                     -{profile}) is longer than {MAX_NAME} characters",
                    crate::text::head(&name, 80)
                ));
            }
        }
    }
    let length = server.description.chars().count();
    if !(1..=MAX_DESCRIPTION).contains(&length) || server.description.trim().is_empty() {
        problems.push(format!(
            "server.description must be 1 to {MAX_DESCRIPTION} characters, not all blank \
             (it has {length})"
        ));
    }
    if let Some(website) = &server.website {
        if let Err(why) = web_page(website) {
            problems.push(format!("server.website {why}"));
        }
    }
    if server.icons.len() > MAX_ICONS {
        problems.push(format!(
            "server.icons lists {} icons; at most {MAX_ICONS}",
            server.icons.len()
        ));
    }
    for (i, icon) in server.icons.iter().enumerate() {
        if let Err(why) = check_icon(icon) {
            problems.push(format!("server.icons[{i}]: {why}"));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(anyhow::anyhow!(problems.join("\n"))),
    }
}

/// Why `url` is not a web page's URL (`http(s)://HOST/...`), if it is not.
fn web_page(url: &str) -> Result<(), String> {
    let quoted = || format!("{:?}", crate::text::head(url, 80));
    if url.len() > MAX_SHORT {
        return Err(format!("is longer than {MAX_SHORT} bytes"));
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("{} is not a URL ({e})", quoted()))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(format!("{} must be an http:// or https:// URL", quoted()));
    }
    Ok(())
}

/// Why `icon` cannot be shown, if it cannot.
fn check_icon(icon: &IconSection) -> Result<(), String> {
    let src = &icon.src;
    if src.len() > MAX_ICON_SRC {
        return Err(format!(
            "src is {} bytes; at most {MAX_ICON_SRC}",
            src.len()
        ));
    }
    let quoted = || format!("{:?}", crate::text::head(src, 60));
    if let Some(data) = src.strip_prefix("data:") {
        // data:[MEDIATYPE][;base64],DATA
        if !data.contains(',') || src.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!(
                "src {} is not a data: URI (data:TYPE;base64,DATA)",
                quoted()
            ));
        }
    } else {
        let parsed = url::Url::parse(src).map_err(|e| {
            format!(
                "src {} is neither an https: URL nor a data: URI ({e})",
                quoted()
            )
        })?;
        if parsed.scheme() != "https" || parsed.host().is_none() {
            return Err(format!(
                "src {} must be an https: URL or a data: URI",
                quoted()
            ));
        }
    }
    if let Some(mime) = &icon.mime_type {
        let shape = mime.len() <= MAX_SHORT
            && mime.split_once('/').is_some_and(|(kind, sub)| {
                let token = |t: &str| {
                    !t.is_empty()
                        && t.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
                };
                token(kind) && token(sub)
            });
        if !shape {
            return Err(format!(
                "mime_type {:?} is not a media type (like image/png)",
                crate::text::head(mime, 60)
            ));
        }
    }
    if icon.sizes.len() > MAX_SIZES {
        return Err(format!(
            "sizes lists {} sizes; at most {MAX_SIZES}",
            icon.sizes.len()
        ));
    }
    for size in &icon.sizes {
        let fits = size == "any"
            || size.split_once('x').is_some_and(|(w, h)| {
                let number =
                    |n: &str| (1..=5).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit());
                number(w) && number(h)
            });
        if !fits {
            return Err(format!(
                "sizes: {:?} is not WIDTHxHEIGHT (like 48x48) or any",
                crate::text::head(size, 40)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn problems(text: &str) -> String {
        Config::parse(text, Path::new("."))
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default()
    }

    #[test]
    fn names_follow_the_card_pattern() {
        for good in [
            DEFAULT_NAME,
            "com.example/weather",
            "a/b",
            "io.github.ada/tools_2.x",
        ] {
            assert!(valid_name(good), "{good}");
        }
        let long = format!("com.example/{}", "x".repeat(200));
        for bad in [
            "weather",
            "/weather",
            "com.example/",
            "com_example/weather",
            "com.example/wea/ther",
            "com.example/wea ther",
            "a/",
            long.as_str(),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert_eq!(profile_card_name("a.b/c", "read_only"), "a.b/c-read_only");
        assert_eq!(card_path("/mcp"), "/mcp/server-card");
        assert_eq!(card_path("/"), "/server-card");
        assert_eq!(card_path("/mcp/"), "/mcp/server-card");
    }

    #[test]
    fn the_defaults_make_a_valid_card() {
        let config = Config::parse("", Path::new(".")).unwrap();
        assert_eq!(config.server.name, DEFAULT_NAME);
        assert_eq!(config.server.description, DEFAULT_DESCRIPTION);
        assert!(config.server.website.is_none() && config.server.icons.is_empty());
        let config = Config::parse(
            "[server]\nname = \"com.example/tools\"\ndescription = \"Tools\"\n\
             website = \"https://example.com/tools\"\n\
             [[server.icons]]\nsrc = \"https://example.com/icon.png\"\n\
             mime_type = \"image/png\"\nsizes = [\"48x48\", \"any\"]\ntheme = \"dark\"\n\
             [[server.icons]]\nsrc = \"data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=\"\n",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(config.server.icons.len(), 2);
        assert_eq!(config.server.icons[0].theme, Some(IconTheme::Dark));
    }

    #[test]
    fn a_card_that_breaks_the_schema_or_grows_is_refused_naming_its_key() {
        let big = format!(
            "[[server.icons]]\nsrc = \"data:image/png;base64,{}\"\n",
            "A".repeat(MAX_ICON_SRC)
        );
        let many = "[[server.icons]]\nsrc = \"https://example.com/i.png\"\n".repeat(9);
        let long = "x".repeat(190);
        for (text, expected) in [
            (
                "[server]\nname = \"wasm-mcp\"\n",
                "server.name \"wasm-mcp\" is not",
            ),
            ("[server]\nname = \"a b/c\"\n", "server.name"),
            (
                "[server]\ndescription = \"\"\n",
                "server.description must be 1 to 100",
            ),
            (
                &format!("[server]\ndescription = \"{}\"\n", "d".repeat(101)),
                "server.description must be 1 to 100",
            ),
            (
                "[server]\nwebsite = \"ftp://example.com\"\n",
                "server.website",
            ),
            ("[server]\nwebsite = \"example.com\"\n", "server.website"),
            (&big, "server.icons[0]: src is"),
            (&many, "at most 8"),
            (
                "[[server.icons]]\nsrc = \"http://example.com/i.png\"\n",
                "must be an https: URL",
            ),
            (
                "[[server.icons]]\nsrc = \"javascript:alert(1)\"\n",
                "must be an https: URL",
            ),
            (
                "[[server.icons]]\nsrc = \"https://e.com/i\"\nmime_type = \"png\"\n",
                "mime_type \"png\"",
            ),
            (
                "[[server.icons]]\nsrc = \"https://e.com/i\"\nsizes = [\"big\"]\n",
                "\"big\" is not WIDTHxHEIGHT",
            ),
            (
                "[[server.icons]]\nsrc = \"https://e.com/i\"\ntheme = \"pink\"\n",
                "theme",
            ),
            (
                "[profiles.server-card]\n",
                "its path /mcp/server-card (by default [http] path then /NAME; give it a path) \
                 is [http] path's server card path",
            ),
            (
                "[profiles.a]\npath = \"/a\"\n[profiles.b]\npath = \"/a/server-card\"\n",
                "is profile a's server card path",
            ),
            (
                "[profiles.a]\npath = \"/mcp/\"\n",
                "has the server card path /mcp/server-card of [http] path",
            ),
            (
                &format!("[server]\nname = \"a.b/{long}\"\n[profiles.read_only_profile]\n"),
                "profiles.read_only_profile: its server card name",
            ),
        ] {
            let said = problems(text);
            assert!(said.contains(expected), "{text}\n-> {said}");
        }
    }
}
