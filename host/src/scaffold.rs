//! `wasm-mcp new`: a small working plugin in a chosen language, with its
//! build file, the contract, and a README that says how to build it. The
//! Rust template carries a copy of the SDK, so it builds anywhere, offline.

use anyhow::{bail, Context as _, Result};
use std::path::{Path, PathBuf};

/// The languages `new` writes plugins in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    /// Rust, with the wasm-mcp SDK.
    Rust,
    /// Python, built with componentize-py.
    Python,
    /// JavaScript, built with componentize-js.
    Js,
    /// C, with `wit-bindgen c`, clang and wasi-libc.
    C,
    /// Go (1.24 or newer), with the helper package `wasmmcp`.
    Go,
}

/// A file of a template: where it goes, and its text with `{{name}}` and
/// `{{lib}}` to fill in.
type File = (&'static str, &'static str);

/// The skill every template ships (see [`crate::skills`]).
const SKILL: File = (
    "skills/getting-started/SKILL.md",
    include_str!("../templates/skills/getting-started/SKILL.md"),
);

const RUST: &[File] = &[
    ("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
    ("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
    ("README.md", include_str!("../templates/rust/README.md")),
    (
        "wasm-mcp-sdk/Cargo.toml",
        include_str!("../../sdk-guest/Cargo.toml"),
    ),
    (
        "wasm-mcp-sdk/src/lib.rs",
        include_str!("../../sdk-guest/src/lib.rs"),
    ),
    (
        "wasm-mcp-sdk/src/__private.rs",
        include_str!("../../sdk-guest/src/__private.rs"),
    ),
    (
        "wasm-mcp-sdk/src/content.rs",
        include_str!("../../sdk-guest/src/content.rs"),
    ),
    (
        "wasm-mcp-sdk/src/host.rs",
        include_str!("../../sdk-guest/src/host.rs"),
    ),
    (
        "wasm-mcp-sdk/src/keyvalue.rs",
        include_str!("../../sdk-guest/src/keyvalue.rs"),
    ),
    (
        "wasm-mcp-sdk/src/plugin.rs",
        include_str!("../../sdk-guest/src/plugin.rs"),
    ),
    (
        "wasm-mcp-sdk/src/prompt.rs",
        include_str!("../../sdk-guest/src/prompt.rs"),
    ),
    (
        "wasm-mcp-sdk/src/resource.rs",
        include_str!("../../sdk-guest/src/resource.rs"),
    ),
    (
        "wasm-mcp-sdk/src/schema.rs",
        include_str!("../../sdk-guest/src/schema.rs"),
    ),
    (
        "wasm-mcp-sdk/src/tool.rs",
        include_str!("../../sdk-guest/src/tool.rs"),
    ),
    (
        "wasm-mcp-sdk/common/Cargo.toml",
        include_str!("../../sdk-guest/common/Cargo.toml"),
    ),
    (
        "wasm-mcp-sdk/common/src/lib.rs",
        include_str!("../../sdk-guest/common/src/lib.rs"),
    ),
    (
        "wasm-mcp-sdk/common/src/uri_template.rs",
        include_str!("../../sdk-guest/common/src/uri_template.rs"),
    ),
    (
        "wasm-mcp-sdk/common/src/uri_template/tests.rs",
        include_str!("../../sdk-guest/common/src/uri_template/tests.rs"),
    ),
];

const PYTHON: &[File] = &[
    ("app.py", include_str!("../templates/python/app.py")),
    ("wasm_mcp.py", include_str!("../../sdk-python/wasm_mcp.py")),
    ("README.md", include_str!("../templates/python/README.md")),
];

const JS: &[File] = &[
    ("app.js", include_str!("../templates/js/app.js")),
    ("wasm-mcp.js", include_str!("../../sdk-js/wasm-mcp.js")),
    ("package.json", include_str!("../templates/js/package.json")),
    ("README.md", include_str!("../templates/js/README.md")),
];

const C: &[File] = &[
    ("plugin.c", include_str!("../templates/c/plugin.c")),
    ("build.sh", include_str!("../templates/c/build.sh")),
    ("README.md", include_str!("../templates/c/README.md")),
];

const GO: &[File] = &[
    ("main.go", include_str!("../templates/go/main.go")),
    ("go.mod", include_str!("../templates/go/go.mod")),
    (
        "wasmmcp/wasmmcp.go",
        include_str!("../../sdk-go/wasmmcp/wasmmcp.go"),
    ),
    (
        "wasmmcp/abi.go",
        include_str!("../../sdk-go/wasmmcp/abi.go"),
    ),
    (
        "wasmmcp/keyvalue.go",
        include_str!("../../sdk-go/wasmmcp/keyvalue.go"),
    ),
    ("build.sh", include_str!("../templates/go/build.sh")),
    ("README.md", include_str!("../templates/go/README.md")),
];

/// Writes plugin `name` in `language` into a new folder `parent/name`;
/// the folder.
pub fn create(language: Language, name: &str, parent: &Path) -> Result<PathBuf> {
    if !crate::names::is_valid(name) || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        bail!("a plugin name starts with a letter and has only letters, digits, '-' and '_': {name:?}");
    }
    let dir = parent.join(name);
    // Never write into something that exists.
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = match language {
        Language::Rust => RUST,
        Language::Python => PYTHON,
        Language::Js => JS,
        Language::C => C,
        Language::Go => GO,
    };
    // The contract, with the WIT packages it uses (wasi:keyvalue), where
    // the template's build reads it.
    let wit = match language {
        Language::Rust => dir.join("wasm-mcp-sdk/wit"),
        _ => dir.join("wit"),
    };
    crate::dev::write_wit(&wit).with_context(|| format!("writing {}", wit.display()))?;
    let lib = name.replace('-', "_");
    for (path, text) in files.iter().chain([&SKILL]) {
        let target = dir.join(path);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder)
                .with_context(|| format!("creating {}", folder.display()))?;
        }
        let verbatim = ["wasm_mcp.py", "wasm-mcp.js"];
        let sdk = path.starts_with("wasm-mcp-sdk/") || path.starts_with("wasmmcp/");
        let text = if sdk || verbatim.contains(path) {
            (*text).to_owned()
        } else {
            text.replace("{{name}}", name).replace("{{lib}}", &lib)
        };
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
        if path.ends_with(".sh") {
            make_executable(&target)?;
        }
    }
    Ok(dir)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rust_template_carries_every_file_of_the_sdk() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk-guest");
        let mut folders = vec![sdk.join("src"), sdk.join("common")];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if !path.ends_with("target") {
                        folders.push(path);
                    }
                    continue;
                }
                let inside = path.strip_prefix(&sdk).unwrap().to_str().unwrap();
                let path = format!("wasm-mcp-sdk/{inside}");
                assert!(RUST.iter().any(|(p, _)| *p == path), "{path} is missing");
            }
        }
    }

    #[test]
    fn writes_each_template_once_and_refuses_bad_names() {
        let parent = tempfile::tempdir().unwrap();
        for (language, name) in [
            (Language::Rust, "my-tool"),
            (Language::Python, "py_tool"),
            (Language::Js, "jsTool"),
            (Language::C, "c-tool"),
            (Language::Go, "go_tool"),
        ] {
            let dir = create(language, name, parent.path()).unwrap();
            let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
            assert!(readme.starts_with(&format!("# {name}")));
            assert!(!readme.contains("{{"));
            assert!(
                readme.contains("skills/"),
                "{name}: its README mentions the skill"
            );
            let skills = crate::skills::read_folder(&dir.join("skills"), name, &Default::default());
            assert!(skills.problems.is_empty(), "{:?}", skills.problems);
            assert_eq!(skills.skills.len(), 1);
            assert!(skills.skills[0].description().contains(name));
            assert!(create(language, name, parent.path()).is_err(), "exists");
        }
        // Each carries the whole contract: plugin.wit and its WIT deps.
        for (dir, wit) in [
            ("my-tool", "wasm-mcp-sdk/wit"),
            ("py_tool", "wit"),
            ("jsTool", "wit"),
            ("c-tool", "wit"),
            ("go_tool", "wit"),
        ] {
            let wit = parent.path().join(dir).join(wit);
            for (path, text) in crate::dev::WIT_FILES {
                assert_eq!(std::fs::read_to_string(wit.join(path)).unwrap(), *text);
            }
        }
        let sdk = parent.path().join("my-tool/wasm-mcp-sdk/src/lib.rs");
        assert!(std::fs::read_to_string(sdk)
            .unwrap()
            .contains("path: \"wit\""));
        for bad in ["", "1up", "a/b", "..", "a b"] {
            assert!(create(Language::Rust, bad, parent.path()).is_err(), "{bad}");
        }
    }
}
