//! WIT doc comments of a plain component's functions.
//!
//! Toolchains drop WIT docs when they build a component; tools that keep
//! them (such as `wit-docs-inject`) add a top-level custom section named
//! `package-docs`: a version byte (0 or 1), then wit-parser's JSON of the
//! package's docs. Only functions' docs are read from it.

use serde_json::Value;

/// The largest `package-docs` section read; a larger one is ignored.
pub(super) const MAX_SECTION_BYTES: usize = 1 << 20;
/// The longest description kept (longer ones are cut at a character).
pub(super) const MAX_DESCRIPTION_BYTES: usize = 4096;

/// The docs of a component's exported functions.
#[derive(Debug, Default)]
pub struct Docs(Option<Value>);

impl Docs {
    /// Reads the `package-docs` section of a component's bytes, if any.
    pub fn read(component: &[u8]) -> Docs {
        let Some(section) = custom_section(component, "package-docs") else {
            return Docs(None);
        };
        if section.len() > MAX_SECTION_BYTES {
            tracing::warn!(
                bytes = section.len(),
                "ignored a package-docs section over 1 MiB"
            );
            return Docs(None);
        }
        match section.split_first() {
            Some((0 | 1, json)) => Docs(serde_json::from_slice(json).ok()),
            _ => Docs(None),
        }
    }

    /// The docs of function `name`, exported from the world directly
    /// (`interface` is `None`) or from the named interface.
    pub fn function(&self, interface: Option<&str>, name: &str) -> Option<String> {
        let docs = self.0.as_ref()?;
        let function = match interface {
            None => docs
                .get("worlds")?
                .as_object()?
                .values()
                .find_map(|world| {
                    ["func_exports", "funcs"]
                        .iter()
                        .find_map(|key| world.get(key)?.get(name))
                })?,
            Some(interface) => docs
                .get("interfaces")?
                .get(interface)?
                .get("funcs")?
                .get(name)?,
        };
        // Version 0 wrote the docs alone; version 1 an object with them.
        let text = function
            .as_str()
            .or_else(|| function.get("docs")?.as_str())?;
        Some(crate::text::head(text.trim(), MAX_DESCRIPTION_BYTES).to_owned())
    }
}

/// Whether a component's bytes carry a `package-docs` section.
pub fn has_package_docs(component: &[u8]) -> bool {
    custom_section(component, "package-docs").is_some()
}

/// The first top-level custom section called `name`.
fn custom_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let mut rest = bytes.get(8..)?;
    while let Some((&id, after)) = rest.split_first() {
        let (size, after) = leb128(after)?;
        let body = after.get(..size)?;
        rest = &after[size..];
        if id == 0 {
            let (len, body) = leb128(body)?;
            if body.get(..len)? == name.as_bytes() {
                return Some(&body[len..]);
            }
        }
    }
    None
}

/// A top-level custom section (id 0), encoded: its size, its name, then
/// `data`.
pub fn custom_section_bytes(name: &str, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(name.len() + data.len() + 5);
    write_leb128(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    let mut section = vec![0];
    write_leb128(body.len(), &mut section);
    section.extend(body);
    section
}

fn write_leb128(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// An unsigned LEB128 u32 and what follows it.
fn leb128(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut value: u32 = 0;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        value |= u32::from(byte & 0x7f).checked_shl(7 * i as u32)?;
        if byte & 0x80 == 0 {
            return Some((value as usize, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(name: &str, data: &[u8]) -> Vec<u8> {
        custom_section_bytes(name, data)
    }

    #[test]
    fn reads_function_docs_from_the_package_docs_section() {
        let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
        bytes.extend(section("producers", b"x"));
        let json = br#"{"worlds":{"w":{"func_exports":{"greet":{"docs":" Greets. "}}}},"interfaces":{"i":{"funcs":{"f":"F."}}}}"#;
        let mut data = vec![1];
        data.extend_from_slice(json);
        bytes.extend(section("package-docs", &data));
        let docs = Docs::read(&bytes);
        assert_eq!(docs.function(None, "greet").as_deref(), Some("Greets."));
        assert_eq!(docs.function(Some("i"), "f").as_deref(), Some("F."));
        assert_eq!(docs.function(None, "other"), None);
    }

    #[test]
    fn truncated_or_missing_sections_give_no_docs() {
        let bytes = b"\0asm\x0d\0\x01\0\0\x7f".to_vec();
        assert_eq!(Docs::read(&bytes).function(None, "greet"), None);
        assert_eq!(Docs::read(b"\0asm").function(None, "greet"), None);
    }
}
