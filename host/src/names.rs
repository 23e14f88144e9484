//! The one rule for names an operator or author chooses (plugins, roots,
//! host-name labels): letters, digits, `-` and `_`, at least one.

/// Whether `name` keeps the rule: ASCII letters, digits, `-` or `_`, and
/// not empty.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn letters_digits_dashes_and_underscores_only() {
        for good in ["a", "hello-rust", "x_1", "0"] {
            assert!(is_valid(good), "{good}");
        }
        for bad in ["", "a b", "a.b", "a/b", "é", "a\n"] {
            assert!(!is_valid(bad), "{bad:?}");
        }
    }
}
