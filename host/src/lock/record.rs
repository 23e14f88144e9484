//! What the lock records of one plugin: where it comes from, its
//! component's digest, who signed it, what its manifest asks for, and
//! each definition it hands the model (kept whole, with its digest, so
//! that a later diff shows the old text beside the new).

use crate::config::Manifest;
use crate::runtime::{prompts, resources, tools, types, Listing};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest signer file (`NAME.signer`) read, in bytes.
pub const MAX_SIGNER_BYTES: u64 = 4 << 10;

/// The signer recorded of a component whose signature was not checked.
pub const NO_SIGNER: &str = "none";

/// One plugin as the lock records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Where it comes from: the OCI reference its `[plugins.NAME] source`
    /// follows, else `file:NAME.wasm` (a file put in the plugin folder).
    pub source: String,
    /// `sha256:HEX` of the component file.
    pub component: String,
    /// Who signed the version pulled (`key sha256:HEX`, `identity ISSUER
    /// SUBJECT`), or `none`.
    pub signer: String,
    /// What its manifest asks for (hosts and variables sorted).
    pub asks: Manifest,
    /// Its tools, by name.
    #[serde(default)]
    pub tools: BTreeMap<String, Definition>,
    /// Its prompts, by name.
    #[serde(default)]
    pub prompts: BTreeMap<String, Definition>,
    /// Its fixed-URI resources, by URI.
    #[serde(default)]
    pub resources: BTreeMap<String, Definition>,
    /// Its resource templates, by URI template.
    #[serde(default)]
    pub templates: BTreeMap<String, Definition>,
}

/// One definition the model reads, kept whole with its digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// `sha256:HEX` of the definition's canonical JSON (keys sorted, no
    /// spaces).
    pub digest: String,
    /// The definition: name, title, description, schemas, annotations
    /// (what a client lists, less icons and `_meta`).
    pub definition: Value,
}

/// What one plugin is now, to be recorded or compared with the lock.
pub struct Observed<'a> {
    /// Where it comes from (see [`Entry::source`]).
    pub source: String,
    /// The component's digest, hex.
    pub component_hash: &'a str,
    /// The text of its signer file, if it has one.
    pub signer: Option<String>,
    /// What its manifest asks for.
    pub manifest: &'a Manifest,
    /// What it lists.
    pub listing: &'a Listing,
}

impl Entry {
    /// The entry recording `observed`.
    pub fn of(observed: Observed<'_>) -> Entry {
        let l = observed.listing;
        Entry {
            source: observed.source,
            component: format!("sha256:{}", observed.component_hash),
            signer: observed.signer.unwrap_or_else(|| NO_SIGNER.to_owned()),
            asks: normalized(observed.manifest),
            tools: keyed(l.tools.iter().map(|t| (t.name.clone(), tool(t)))),
            prompts: keyed(l.prompts.iter().map(|p| (p.name.clone(), prompt(p)))),
            resources: keyed(l.resources.iter().map(|r| (r.uri.clone(), resource(r)))),
            templates: keyed(
                l.templates
                    .iter()
                    .map(|t| (t.uri_template.clone(), template(t))),
            ),
        }
    }

    /// Whether its definitions (all four kinds) are those of `other`.
    pub fn same_definitions(&self, other: &Entry) -> bool {
        self.tools == other.tools
            && self.prompts == other.prompts
            && self.resources == other.resources
            && self.templates == other.templates
    }
}

/// Where plugin `name` comes from, as recorded: its configured OCI
/// `source`, else `file:NAME.wasm`.
pub fn source_of(config: &crate::config::Config, name: &str) -> String {
    config
        .plugins
        .get(name)
        .and_then(|p| p.source.clone())
        .unwrap_or_else(|| format!("file:{name}.wasm"))
}

/// The signer file of the component at `wasm`: `NAME.signer` beside it.
pub fn signer_path(wasm: &Path) -> PathBuf {
    wasm.with_extension("signer")
}

/// The signer named beside the component at `wasm` (its first line,
/// trimmed, control characters escaped), `None` when there is no signer
/// file. Reads at most [`MAX_SIGNER_BYTES`]; blocks: call it off the async
/// workers.
pub fn read_signer(wasm: &Path) -> std::io::Result<Option<String>> {
    let path = signer_path(wasm);
    match crate::files::read_regular_text(&path, MAX_SIGNER_BYTES) {
        Ok(text) => {
            let line = text.lines().next().unwrap_or_default().trim();
            Ok(Some(crate::text::excerpt(line)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("reading {}: {e}", path.display()),
        )),
    }
}

/// `manifest` with its lists sorted and without repeats, so that the
/// order it was written in is no difference.
fn normalized(manifest: &Manifest) -> Manifest {
    let sorted = |list: &[String]| {
        let mut list = list.to_vec();
        list.sort();
        list.dedup();
        list
    };
    Manifest {
        roots: manifest.roots.clone(),
        hosts: sorted(&manifest.hosts),
        env: sorted(&manifest.env),
        keyvalue: manifest.keyvalue,
    }
}

/// The definitions, by key; a key listed twice is kept as `KEY#2`, ...
fn keyed(items: impl Iterator<Item = (String, Value)>) -> BTreeMap<String, Definition> {
    let mut map = BTreeMap::new();
    for (key, definition) in items {
        let mut unique = key.clone();
        let mut n = 1;
        while map.contains_key(&unique) {
            n += 1;
            unique = format!("{key}#{n}");
        }
        let digest = digest(&definition);
        map.insert(unique, Definition { digest, definition });
    }
    map
}

/// `sha256:HEX` of `value`'s canonical JSON.
pub fn digest(value: &Value) -> String {
    let bytes = serde_json::to_vec(value).expect("a JSON value serializes");
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// A schema as JSON; text that is not JSON is kept as a string.
fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// An object of the fields that are set.
fn object(fields: impl IntoIterator<Item = (&'static str, Option<Value>)>) -> Value {
    let map: Map<String, Value> = fields
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect();
    Value::Object(map)
}

fn text(value: &Option<String>) -> Option<Value> {
    value.clone().map(Value::String)
}

fn tool(t: &tools::Tool) -> Value {
    let annotations = t.annotations.as_ref().map(|a| {
        object([
            ("title", text(&a.title)),
            ("readOnlyHint", a.read_only_hint.map(Value::Bool)),
            ("destructiveHint", a.destructive_hint.map(Value::Bool)),
            ("idempotentHint", a.idempotent_hint.map(Value::Bool)),
            ("openWorldHint", a.open_world_hint.map(Value::Bool)),
        ])
    });
    object([
        ("name", Some(json!(t.name))),
        ("title", text(&t.title)),
        ("description", text(&t.description)),
        ("inputSchema", Some(schema(&t.input_schema))),
        ("outputSchema", t.output_schema.as_deref().map(schema)),
        ("annotations", annotations),
    ])
}

fn prompt(p: &prompts::Prompt) -> Value {
    let arguments: Vec<Value> = p
        .arguments
        .iter()
        .map(|a| {
            object([
                ("name", Some(json!(a.name))),
                ("title", text(&a.title)),
                ("description", text(&a.description)),
                ("required", Some(json!(a.required))),
            ])
        })
        .collect();
    object([
        ("name", Some(json!(p.name))),
        ("title", text(&p.title)),
        ("description", text(&p.description)),
        ("arguments", Some(Value::Array(arguments))),
    ])
}

fn annotations(a: &Option<types::Annotations>) -> Option<Value> {
    let a = a.as_ref()?;
    let audience: Vec<Value> = a
        .audience
        .iter()
        .map(|r| {
            json!(match r {
                types::Role::User => "user",
                types::Role::Assistant => "assistant",
            })
        })
        .collect();
    Some(object([
        ("audience", Some(Value::Array(audience))),
        ("priority", a.priority.map(|p| json!(p))),
        ("lastModified", text(&a.last_modified)),
    ]))
}

fn resource(r: &resources::Resource) -> Value {
    object([
        ("uri", Some(json!(r.uri))),
        ("name", Some(json!(r.name))),
        ("title", text(&r.title)),
        ("description", text(&r.description)),
        ("mimeType", text(&r.mime_type)),
        ("annotations", annotations(&r.annotations)),
    ])
}

fn template(t: &resources::ResourceTemplate) -> Value {
    object([
        ("uriTemplate", Some(json!(t.uri_template))),
        ("name", Some(json!(t.name))),
        ("title", text(&t.title)),
        ("description", text(&t.description)),
        ("mimeType", text(&t.mime_type)),
        ("annotations", annotations(&t.annotations)),
    ])
}
