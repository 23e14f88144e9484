//! Gives the binary its source revision: `WASM_MCP_REVISION`, which
//! `wasm-mcp --version` prints and the image's labels repeat.
//!
//! The revision is the environment's `WASM_MCP_REVISION` when set (a build
//! from a tarball has no `.git`), else `git rev-parse HEAD` (the full
//! 40-character hash), else `unknown`. Cargo reruns this script when HEAD
//! moves: after a commit, a checkout or a fetch that updates packed refs.
//!
//! On Linux with glibc it also links the binary with packed relative
//! relocations (`-z pack-relative-relocs`, DT_RELR; GNU ld 2.38+, glibc
//! 2.36+): the ~84 000 relative relocations of a position-independent
//! executable this size take 22 KB instead of 2 MB, and the loader applies
//! them in a fraction of the time (7.1 million cycles to 0.5 million by
//! `LD_DEBUG=statistics`; `wasm-mcp --version` ~2 ms sooner). Only the
//! binary: tests and dependencies link as before.
//!
//! Where rustc links with its own LLD, the binary's functions that serve
//! requests are placed together (`hot-functions.txt`; see
//! [`order_hot_functions`]).
//!
//! Standard library only.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=WASM_MCP_REVISION");
    let dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let revision = match std::env::var("WASM_MCP_REVISION") {
        Ok(value) if !value.trim().is_empty() => value.trim().to_string(),
        _ => {
            watch_head(&dir);
            git(&dir, &["rev-parse", "HEAD"])
                .filter(|hash| hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
                .unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=WASM_MCP_REVISION={revision}");

    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os == "linux" && target_env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    order_hot_functions(&dir);
}

/// Links the functions that serve requests (`hot-functions.txt`, written by
/// `scripts/bench-callgrind.py --hot-functions`) together at the start of
/// the code: serving then touches ~2 MB of it instead of pieces of ~15 MB.
/// A linker script (the default layout otherwise) names them first in
/// `.text`, where LLD puts every other function after them (one `.text`, as
/// valgrind and other tools expect); it picks each by its section's name; a name
/// ending in `.llvm.<hash>` (a local symbol the crate's ThinLTO promoted,
/// whose hash changes with any change to its codegen unit) is matched
/// whatever the hash. Names the build no longer has match nothing.
/// Only the binary, and only where rustc links with its own LLD (x86_64
/// Linux with glibc, no linker and no link option in `RUSTFLAGS`).
fn order_hot_functions(dir: &Path) {
    let order = dir.join("hot-functions.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let own_lld = var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_none()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("link");
    let Ok(names) = std::fs::read_to_string(&order) else {
        return;
    };
    if !own_lld {
        return;
    }
    let mut script = String::from("SECTIONS {\n  .text : {\n");
    for name in names.lines().map(str::trim) {
        // Only names a linker script reads as one word.
        let plain = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_$.".contains(&b));
        if name.is_empty() || !plain {
            continue;
        }
        // Cold functions (`#[cold]`, such as a vector's growth) are in
        // `.text.unlikely.<name>`.
        let section = match name.find(".llvm.") {
            Some(at) => format!("{}.llvm.*", &name[..at]),
            None => name.to_string(),
        };
        script.push_str(&format!(
            "    *(.text.{section} .text.unlikely.{section})\n"
        ));
    }
    script.push_str("  }\n}\nINSERT BEFORE .init;\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let path = out.join("hot-functions.ld");
    std::fs::write(&path, script).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", path.display());
}

/// Asks cargo to rerun this script when the checked-out commit changes:
/// `HEAD`, the branch it points to (its loose file, or its folder while the
/// ref is packed, since a commit then writes a new loose file) and `packed-refs`.
/// Only files that exist are named: cargo reruns every build for a missing one.
fn watch_head(dir: &Path) {
    let mut paths = Vec::new();
    if let Some(head) = git_path(dir, "HEAD") {
        paths.push(head);
    }
    if let Some(name) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(branch) = git_path(dir, &name) {
            if branch.is_file() {
                paths.push(branch);
            } else if let Some(parent) = branch.parent() {
                paths.push(parent.to_path_buf());
            }
        }
    }
    if let Some(packed) = git_path(dir, "packed-refs") {
        paths.push(packed);
    }
    for path in paths.into_iter().filter(|path| path.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Where git keeps `name` (worktrees keep refs in the common folder).
fn git_path(dir: &Path, name: &str) -> Option<PathBuf> {
    git(dir, &["rev-parse", "--git-path", name]).map(|path| dir.join(path))
}

/// One line of git's output, or `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let line = text.trim();
    (!line.is_empty()).then(|| line.to_string())
}
