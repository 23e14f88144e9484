//! WIT doc comments put back into a component: toolchains drop them when
//! they build one, and a plain component's tools take their descriptions
//! from them (see `runtime::plain::docs`). `build` and `dev` add them,
//! from the source folder's `wit/`, as the `package-docs` custom section
//! that wit-parser defines.

use anyhow::{Context as _, Result};
use std::path::Path;
use wit_parser::{PackageMetadata, Resolve};

/// `component` with the docs of the WIT package in `wit_dir` added, or
/// `None` when it has a `package-docs` section already, or the package is
/// the plugin contract (whose docs the host does not read).
pub(super) fn with_docs(component: &[u8], wit_dir: &Path) -> Result<Option<Vec<u8>>> {
    if crate::runtime::has_package_docs(component) {
        return Ok(None);
    }
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(wit_dir)
        .with_context(|| format!("reading the WIT in {}", wit_dir.display()))?;
    let name = &resolve.packages[package].name;
    if (name.namespace.as_str(), name.name.as_str()) == ("wasm-mcp", "plugin") {
        return Ok(None);
    }
    let data = PackageMetadata::extract(&resolve, package).encode()?;
    let mut out = component.to_vec();
    out.extend(crate::runtime::custom_section_bytes(
        PackageMetadata::SECTION_NAME,
        &data,
    ));
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_of_a_world_s_functions_are_added_once() {
        let wit = tempfile::tempdir().unwrap();
        std::fs::write(
            wit.path().join("world.wit"),
            "package local:p;\n\n/// The world.\nworld w {\n    /// Greets someone.\n    export greet: func(name: string) -> string;\n}\n",
        )
        .unwrap();
        // An empty component: the preamble alone.
        let component = b"\0asm\x0d\0\x01\0".to_vec();
        let with = with_docs(&component, wit.path()).unwrap().unwrap();
        let docs = crate::runtime::PlainDocs::read(&with);
        assert_eq!(
            docs.function(None, "greet").as_deref(),
            Some("Greets someone.")
        );
        assert!(with_docs(&with, wit.path()).unwrap().is_none());
        // The contract's own docs are not added.
        let contract = tempfile::tempdir().unwrap();
        crate::dev::write_wit(contract.path()).unwrap();
        assert!(with_docs(&component, contract.path()).unwrap().is_none());
    }
}
