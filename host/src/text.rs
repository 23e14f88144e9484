//! Quoting text that came from outside (a registry's error body, a
//! signature's claims) in errors and logs: short, and with every control
//! character escaped, so it can neither flood a log nor forge lines in it.

/// The most characters of outside text quoted.
pub const MAX_EXCERPT_CHARS: usize = 200;

/// The longest start of `text` of at most `max` bytes that ends on a
/// character boundary.
pub fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` cut to [`MAX_EXCERPT_CHARS`] characters (then `…`), with
/// control characters (newlines, escapes, ...) written as escapes.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_EXCERPT_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        assert_eq!(excerpt("plain"), "plain");
        let forged = excerpt("oops\n2026-01-01 INFO all is well\r\x1b[2J");
        assert!(!forged.chars().any(char::is_control), "{forged}");
        assert!(forged.contains("\\n"));
        let long = excerpt(&"é".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_EXCERPT_CHARS + 1);
        assert_eq!(head("ééé", 3), "é");
        assert_eq!(head("abc", 8), "abc");
    }
}
