//! Building a plugin from its source folder with the plugin's own toolchain:
//! Cargo for Rust, componentize-py for Python, componentize-js for
//! JavaScript, and the folder's own `build.sh` for anything else (C and
//! Go, as `wasm-mcp new` writes them). Build output goes to stderr; stdout
//! is the MCP channel.

use anyhow::{bail, Context as _, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// The plugin contract, file by file as a `wit/` folder holds it:
/// `plugin.wit` and, under `deps/`, the WIT packages its worlds include
/// (`wasi:keyvalue@0.2.0-draft2`). `dev` writes it where the generators
/// read it ([`write_wit`]); `wasm-mcp new` puts it in every template.
pub const WIT_FILES: &[(&str, &str)] = &[
    ("plugin.wit", include_str!("../../../wit/plugin.wit")),
    (
        "deps/keyvalue/atomic.wit",
        include_str!("../../../wit/deps/keyvalue/atomic.wit"),
    ),
    (
        "deps/keyvalue/batch.wit",
        include_str!("../../../wit/deps/keyvalue/batch.wit"),
    ),
    (
        "deps/keyvalue/store.wit",
        include_str!("../../../wit/deps/keyvalue/store.wit"),
    ),
    (
        "deps/keyvalue/watch.wit",
        include_str!("../../../wit/deps/keyvalue/watch.wit"),
    ),
    (
        "deps/keyvalue/world.wit",
        include_str!("../../../wit/deps/keyvalue/world.wit"),
    ),
];

/// The plugin contract as one self-contained WIT document (`wasm-mcp wit`
/// prints it): `plugin.wit`, then each package under `deps/` as a nested
/// `package NAME { ... }` block, which every generator reads as the
/// folder. Its text is [`Contract`]'s `Display`.
pub const WIT: Contract = Contract;

/// The type of [`WIT`].
#[derive(Debug, Clone, Copy)]
pub struct Contract;

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (main, deps) = WIT_FILES.split_first().expect("plugin.wit comes first");
        f.write_str(main.1)?;
        let mut open: Option<&str> = None;
        for (path, text) in deps {
            let folder = path.rsplit_once('/').map_or("", |(folder, _)| folder);
            if open != Some(folder) {
                if open.is_some() {
                    f.write_str("}\n")?;
                }
                let package = package_of(folder).expect("every dependency has a package line");
                write!(f, "\npackage {package} {{\n")?;
                open = Some(folder);
            }
            for line in text.lines() {
                if !line.trim_start().starts_with("package ") {
                    writeln!(f, "{line}")?;
                }
            }
        }
        if open.is_some() {
            f.write_str("}\n")?;
        }
        Ok(())
    }
}

/// The package that the files of `folder` (in [`WIT_FILES`]) declare.
fn package_of(folder: &str) -> Option<&'static str> {
    WIT_FILES
        .iter()
        .filter(|(path, _)| path.rsplit_once('/').map(|(f, _)| f) == Some(folder))
        .flat_map(|(_, text)| text.lines())
        .find_map(|line| line.trim().strip_prefix("package "))
        .map(|rest| rest.trim_end_matches(';').trim())
}

/// Writes the contract's files ([`WIT_FILES`]) into `dir` (made if
/// missing), as the folder the generators read.
pub fn write_wit(dir: &Path) -> std::io::Result<()> {
    for (path, text) in WIT_FILES {
        let target = dir.join(path);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::write(target, text)?;
    }
    Ok(())
}

/// How a source folder is built.
#[derive(Debug, Clone, PartialEq)]
pub enum Toolchain {
    /// A Cargo package: `cargo build --target wasm32-wasip2`.
    Cargo,
    /// `app.py`, built by componentize-py against `world`.
    Python {
        /// The contract world the module implements.
        world: &'static str,
    },
    /// `app.js`, built by componentize-js against `world`.
    JavaScript {
        /// The contract world the module implements.
        world: &'static str,
    },
    /// An executable `build.sh` that writes `<folder name>.wasm` beside
    /// itself.
    Script,
}

impl Toolchain {
    /// Recognises the toolchain of `dir` from the files in it.
    pub fn detect(dir: &Path) -> Result<Self> {
        if dir.join("Cargo.toml").is_file() {
            return Ok(Toolchain::Cargo);
        }
        if let Some(text) = read(&dir.join("app.py"))? {
            // A class of that name, or a name bound to one (`Tools = ...`).
            let has = |interface: &str| {
                text.lines().any(|line| {
                    let line = line.trim_end();
                    line.starts_with(&format!("class {interface}("))
                        || line.starts_with(&format!("class {interface}:"))
                        || line
                            .strip_prefix(interface)
                            .is_some_and(|rest| rest.trim_start().starts_with('='))
                })
            };
            return Ok(Toolchain::Python {
                world: world(
                    has("Tools"),
                    has("Resources"),
                    has("Prompts"),
                    has("Completions"),
                )
                .context("app.py defines none of the classes Tools, Resources, Prompts")?,
            });
        }
        if let Some(text) = read(&dir.join("app.js"))? {
            let has = |interface: &str| text.contains(&format!("export const {interface}"));
            return Ok(Toolchain::JavaScript {
                world: world(
                    has("tools"),
                    has("resources"),
                    has("prompts"),
                    has("completions"),
                )
                .context("app.js exports none of `export const tools`, `resources`, `prompts`")?,
            });
        }
        if dir.join(BUILD_SCRIPT).is_file() {
            return Ok(Toolchain::Script);
        }
        bail!(
            "{}: no Cargo.toml, app.py, app.js or {BUILD_SCRIPT}: cannot tell how to build it",
            dir.display()
        )
    }

    /// Checks that `wanted` (a world named by hand, with or without the
    /// `wasm-mcp:plugin/` package) is the one this module needs: for
    /// Python and JavaScript, the smallest world that covers what the
    /// module defines (any other fails to build, in the generator's words);
    /// other toolchains pick their world in their own build files.
    pub fn check_world(&self, wanted: &str) -> Result<()> {
        let wanted = wanted.strip_prefix("wasm-mcp:plugin/").unwrap_or(wanted);
        let (world, module, defined) = match self {
            Toolchain::Python { world } => (*world, "app.py", "the classes"),
            Toolchain::JavaScript { world } => (*world, "app.js", "the exports"),
            Toolchain::Cargo | Toolchain::Script => bail!(
                "--world is for Python and JavaScript plugins; a Rust plugin's world comes \
                 from its SDK, a build.sh names its own"
            ),
        };
        if wanted != world {
            bail!(
                "{module} needs the world wasm-mcp:plugin/{world}, not {wanted}: it is the one \
                 whose exports are {defined} {module} defines ({}); leave --world out and \
                 wasm-mcp build picks it",
                exports_of(world)
            );
        }
        Ok(())
    }

    /// Builds the component from `dir` and writes it to `out`. `wit_dir`
    /// holds the contract; `release` asks Cargo for an optimised build.
    pub async fn build(&self, dir: &Path, out: &Path, wit_dir: &Path, release: bool) -> Result<()> {
        match self {
            Toolchain::Cargo => {
                let built = cargo_build(dir, release).await?;
                tokio::fs::copy(&built, out)
                    .await
                    .with_context(|| format!("copying {}", built.display()))?;
            }
            Toolchain::Python { world } => {
                let mut command = Command::new(tool("componentize-py", dir));
                command
                    .arg("-d")
                    .arg(wit_dir)
                    .arg("-w")
                    .arg(format!("wasm-mcp:plugin/{world}"))
                    .args(["componentize", "app", "-o"])
                    .arg(out);
                run(
                    command,
                    dir,
                    "componentize-py (pip install componentize-py)",
                )
                .await?;
            }
            Toolchain::JavaScript { world } => {
                let mut command = Command::new(tool("componentize-js", dir));
                command
                    .arg("app.js")
                    .arg("--wit")
                    .arg(wit_dir)
                    .arg("--world-name")
                    .arg(format!("wasm-mcp:plugin/{world}"))
                    .args(["-d", "http", "-d", "fetch-event", "-o"])
                    .arg(out);
                let built = run(
                    command,
                    dir,
                    "componentize-js (npm install @bytecodealliance/componentize-js)",
                )
                .await;
                if let Err(e) = built {
                    // componentize-js does not say where a syntax error is.
                    return match syntax_error(dir).await {
                        Some(found) => Err(e.context(found)),
                        None => Err(e),
                    };
                }
            }
            Toolchain::Script => {
                // What an earlier build wrote goes first, so that a script
                // that writes nothing is not taken to have built it.
                let built = dir.join(format!("{}.wasm", super::plugin_name_for(dir)));
                match tokio::fs::remove_file(&built).await {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(e).with_context(|| format!("removing {}", built.display()))
                    }
                }
                let what = "an executable build.sh and the tools it runs";
                run(Command::new(dir.join(BUILD_SCRIPT)), dir, what).await?;
                tokio::fs::copy(&built, out)
                    .await
                    .with_context(|| format!("{BUILD_SCRIPT} did not write {}", built.display()))?;
                // A plain component's tools are described by its WIT docs.
                let (wit, out) = (dir.join("wit"), out.to_owned());
                tokio::task::spawn_blocking(move || -> Result<()> {
                    if !wit.is_dir() {
                        return Ok(());
                    }
                    let bytes = crate::files::read_regular(&out, MAX_COMPONENT_BYTES)
                        .with_context(|| format!("reading {}", out.display()))?;
                    if let Some(with) = super::wit_docs::with_docs(&bytes, &wit)? {
                        std::fs::write(&out, with)?;
                    }
                    Ok(())
                })
                .await??;
            }
        }
        Ok(())
    }
}

/// Where `app.js` in `dir` breaks JavaScript's syntax, in Node's words
/// (`node --check`, as a module); `None` when it parses, or Node cannot
/// be run.
async fn syntax_error(dir: &Path) -> Option<String> {
    let source = dir.join("app.js");
    // A copy named .mjs: Node checks it as a module whatever package.json says.
    let copied = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
        let text = crate::files::read_regular(&source, MAX_CHECKED_SOURCE_BYTES)?;
        let folder = crate::files::private_temp_dir("wasm-mcp-check-")?;
        let copy = folder.path().join("app.mjs");
        std::fs::write(&copy, text)?;
        Ok((folder, copy))
    })
    .await
    .ok()?
    .ok()?;
    let (_folder, copy) = copied;
    let checked = Command::new(tool("node", dir))
        .arg("--check")
        .arg(&copy)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .ok()?;
    if checked.status.success() {
        return None;
    }
    let said = String::from_utf8_lossy(&checked.stderr);
    let said = crate::text::head(&said, SAID_BYTES).replace(&*copy.to_string_lossy(), "app.js");
    (!said.trim().is_empty()).then_some(said)
}

/// The largest `app.js` whose syntax is checked after a failed build.
const MAX_CHECKED_SOURCE_BYTES: u64 = 16 << 20;

/// The script a folder of another language builds with.
const BUILD_SCRIPT: &str = "build.sh";

/// The largest component a build script may write (`[server]
/// max_plugin_mb`'s default: a larger one would not be served anyway).
const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// The smallest contract world with the exported interfaces (completions
/// only come with the full world).
fn world(tools: bool, resources: bool, prompts: bool, completions: bool) -> Option<&'static str> {
    if completions {
        return Some("plugin");
    }
    match (tools, resources, prompts) {
        (false, false, false) => None,
        (true, false, false) => Some("tools-plugin"),
        (false, true, false) => Some("resources-plugin"),
        (false, false, true) => Some("prompts-plugin"),
        (true, true, false) => Some("tools-resources-plugin"),
        (true, false, true) => Some("tools-prompts-plugin"),
        (false, true, true) => Some("resources-prompts-plugin"),
        (true, true, true) => Some("tools-resources-prompts-plugin"),
    }
}

/// The interfaces world `world` exports, for messages.
fn exports_of(world: &str) -> &'static str {
    match world {
        "plugin" => "tools, resources, prompts, completions",
        "tools-plugin" => "tools",
        "resources-plugin" => "resources",
        "prompts-plugin" => "prompts",
        "tools-resources-plugin" => "tools, resources",
        "tools-prompts-plugin" => "tools, prompts",
        "resources-prompts-plugin" => "resources, prompts",
        _ => "tools, resources, prompts",
    }
}

fn read(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// A build tool: the project's own copy (`node_modules/.bin`, `.venv/bin`)
/// when there is one, otherwise whatever `PATH` finds.
fn tool(name: &str, dir: &Path) -> PathBuf {
    ["node_modules/.bin", ".venv/bin", "venv/bin"]
        .iter()
        .map(|sub| dir.join(sub).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Runs a build command in `dir`: its stdout and stderr go to stderr.
async fn run(mut command: Command, dir: &Path, what: &str) -> Result<()> {
    let program = command.as_std().get_program().to_owned();
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {} (needs {what})", program.to_string_lossy()))?;
    // Shown as it comes, and the end kept for the error.
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let mut said = Said::default();
    while let Some(line) = lines.next_line().await? {
        eprintln!("{line}");
        said.push(&line);
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!(
            "{} failed ({status}):\n{}",
            program.to_string_lossy(),
            said.text()
        );
    }
    Ok(())
}

/// What a build tool wrote, kept for its error: its first lines and its
/// last, at most [`SAID_BYTES`] of each (an error may come first and a
/// long backtrace after it, or the other way round).
#[derive(Default)]
struct Said {
    head: Vec<String>,
    head_bytes: usize,
    tail: std::collections::VecDeque<String>,
    tail_bytes: usize,
    /// Lines dropped between the two.
    skipped: usize,
}

/// The most bytes of a build tool's output kept for its error, at its
/// start and at its end each.
const SAID_BYTES: usize = 8 << 10;

impl Said {
    fn push(&mut self, line: &str) {
        let line = crate::text::head(line, SAID_BYTES);
        if self.head_bytes + line.len() < SAID_BYTES && self.tail.is_empty() {
            self.head_bytes += line.len() + 1;
            self.head.push(line.to_owned());
            return;
        }
        self.tail_bytes += line.len() + 1;
        self.tail.push_back(line.to_owned());
        while self.tail_bytes > SAID_BYTES && self.tail.len() > 1 {
            let old = self.tail.pop_front().expect("more than one line");
            self.tail_bytes -= old.len() + 1;
            self.skipped += 1;
        }
    }

    fn text(&self) -> String {
        let mut lines: Vec<String> = self.head.clone();
        if self.skipped > 0 {
            lines.push(format!("… ({} lines left out)", self.skipped));
        }
        lines.extend(self.tail.iter().cloned());
        lines.join("\n")
    }
}

/// `cargo build` for wasm32-wasip2; returns the `.wasm` it produced.
/// Diagnostics go to stderr (and errors into the failure); the artifact's
/// path comes from Cargo's JSON messages, so workspaces and custom target
/// folders just work.
async fn cargo_build(dir: &Path, release: bool) -> Result<PathBuf> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.args([
        "build",
        "--target",
        "wasm32-wasip2",
        "--message-format=json",
    ]);
    if release {
        command.arg("--release");
    }
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("running cargo")?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut artifacts = Vec::new();
    let mut errors = Said::default();
    while let Some(line) = lines.next_line().await? {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] == "compiler-message" {
            let rendered = message["message"]["rendered"].as_str().unwrap_or_default();
            eprint!("{rendered}");
            if message["message"]["level"] == "error" {
                for line in rendered.lines() {
                    errors.push(line);
                }
            }
        }
        if message["reason"] == "compiler-artifact" {
            let wasm = message["filenames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str())
                .filter(|f| f.ends_with(".wasm"))
                .map(PathBuf::from);
            artifacts.extend(wasm);
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!("cargo build failed ({status}):\n{}", errors.text());
    }
    match artifacts.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!("cargo built no .wasm: is the crate a cdylib (`crate-type = [\"cdylib\"]`)?"),
        many => bail!(
            "cargo built {} components; point `dev` at one package",
            many.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_has_a_world_of_the_contract() {
        let wit = include_str!("../../../wit/plugin.wit");
        for bits in 1..16u8 {
            let [t, r, p, c] = [1, 2, 4, 8].map(|b| bits & b != 0);
            let name = world(t, r, p, c).unwrap();
            assert!(wit.contains(&format!("world {name} {{")), "{name}");
        }
        assert_eq!(world(false, false, false, false), None);
    }

    #[test]
    fn the_printed_contract_is_the_folder_in_one_document() {
        let printed = WIT.to_string();
        assert!(printed.starts_with(WIT_FILES[0].1));
        assert!(printed.contains("package wasi:keyvalue@0.2.0-draft2 {"));
        let mut one = wit_parser::Resolve::default();
        one.push_str("plugin.wit", &printed).unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_wit(dir.path()).unwrap();
        let mut folder = wit_parser::Resolve::default();
        folder.push_dir(dir.path()).unwrap();
        let names = |r: &wit_parser::Resolve| {
            let mut names: Vec<String> = r
                .interfaces
                .iter()
                .filter_map(|(_, i)| {
                    let package = &r.packages[i.package?].name;
                    Some(format!("{package}/{}", i.name.as_deref()?))
                })
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&one), names(&folder));
        assert!(names(&one).contains(&"wasi:keyvalue@0.2.0-draft2/atomics".to_owned()));
        // Every world of the contract imports the store.
        let tools = folder
            .worlds
            .iter()
            .find(|(_, w)| w.name == "tools-plugin")
            .unwrap()
            .1;
        assert!(tools
            .imports
            .keys()
            .any(|k| folder.name_world_key(k) == "wasi:keyvalue/store@0.2.0-draft2"));
    }

    #[test]
    fn a_world_named_by_hand_must_be_the_one_the_module_needs() {
        let python = Toolchain::Python {
            world: "tools-prompts-plugin",
        };
        python.check_world("tools-prompts-plugin").unwrap();
        python
            .check_world("wasm-mcp:plugin/tools-prompts-plugin")
            .unwrap();
        let wrong = python.check_world("plugin").unwrap_err().to_string();
        assert!(
            wrong.contains("needs the world wasm-mcp:plugin/tools-prompts-plugin, not plugin"),
            "{wrong}"
        );
        assert!(wrong.contains("(tools, prompts)"), "{wrong}");
        assert!(Toolchain::Cargo.check_world("plugin").is_err());
    }

    #[test]
    fn detects_each_toolchain_and_the_smallest_world() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Toolchain::detect(dir.path()).is_err());
        std::fs::write(dir.path().join("app.js"), "export const tools = {};").unwrap();
        assert_eq!(
            Toolchain::detect(dir.path()).unwrap(),
            Toolchain::JavaScript {
                world: "tools-plugin"
            }
        );
        std::fs::write(
            dir.path().join("app.py"),
            "class Resources(exports.Resources): ...\nclass Prompts(exports.Prompts): ...",
        )
        .unwrap();
        assert_eq!(
            Toolchain::detect(dir.path()).unwrap(),
            Toolchain::Python {
                world: "resources-prompts-plugin"
            }
        );
        std::fs::write(
            dir.path().join("app.py"),
            "class Tools(exports.Tools): ...\nPrompts = plugin.Prompts\nclass Completions:\n",
        )
        .unwrap();
        assert_eq!(
            Toolchain::detect(dir.path()).unwrap(),
            Toolchain::Python { world: "plugin" }
        );
        std::fs::write(dir.path().join("Cargo.toml"), "[package]").unwrap();
        assert_eq!(Toolchain::detect(dir.path()).unwrap(), Toolchain::Cargo);
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("build.sh"), "#!/bin/sh\n").unwrap();
        assert_eq!(Toolchain::detect(other.path()).unwrap(), Toolchain::Script);
    }
}
