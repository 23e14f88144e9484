//! The merged, name-checked catalogue of everything the loaded plugins offer.
//!
//! Naming rules (stable and documented in the book, docs/src/plugins/contract.md):
//! - plugins are merged in order of plugin name;
//! - a tool or prompt keeps its own name unless an earlier plugin already
//!   uses it; then it is offered as `<plugin>.<name>` and a warning is logged;
//! - a resource URI or template that an earlier plugin already serves is
//!   dropped from the later plugin, with a warning;
//! - a plugin's skills are served under `skill://<plugin>/`, so they never
//!   collide with another plugin's; each skill file is also a resource.

use super::uri_template::UriTemplate;
use crate::protocol::{header_parameters, HeaderParameter};
use crate::runtime::{prompts, resources, tools, Listing, LoadedPlugin};
use crate::skills::{Skill, SkillFile, Skills};
use std::collections::HashMap;
use std::sync::Arc;

/// The scheme of the URIs the host serves skills at.
const SKILL_SCHEME: &str = "skill://";

/// A tool as offered to clients.
pub struct ToolEntry {
    /// The name clients call it by.
    pub name: String,
    /// The plugin's description of it (with its own name).
    pub tool: tools::Tool,
    /// The plugin that serves it.
    pub plugin: Arc<LoadedPlugin>,
    /// The input schema.
    pub input_schema: Arc<serde_json::Value>,
    /// The compiled input schema.
    pub validator: Arc<jsonschema::Validator>,
    /// What checking arguments against it may cost
    /// ([`super::schema_limits`]).
    pub schema_bound: Arc<super::schema_limits::Bound>,
    /// The arguments a stateless call repeats in `Mcp-Param-*` headers.
    pub header_parameters: Arc<[HeaderParameter]>,
    /// The output schema, if the tool has a readable one.
    pub output_schema: Option<Arc<serde_json::Value>>,
    /// Whether the model sees it: false for a tool its `_meta.ui` says is
    /// for its view only (listed to no one, callable as any other).
    pub for_model: bool,
}

/// A fixed-URI resource as offered to clients.
pub struct ResourceEntry {
    /// The plugin's description.
    pub resource: resources::Resource,
    /// The plugin that serves it.
    pub plugin: Arc<LoadedPlugin>,
    /// For a file of one of the plugin's skills, the skill and the file:
    /// the host serves it, not the plugin.
    pub skill_file: Option<(Arc<Skill>, Arc<SkillFile>)>,
}

/// A skill as offered to clients.
pub struct SkillEntry {
    /// The skill.
    pub skill: Arc<Skill>,
    /// The plugin that ships it.
    pub plugin: Arc<LoadedPlugin>,
}

/// A resource template as offered to clients.
pub struct TemplateEntry {
    /// The plugin's description.
    pub template: resources::ResourceTemplate,
    /// The parsed template, for routing reads.
    pub matcher: UriTemplate,
    /// The plugin that serves it.
    pub plugin: Arc<LoadedPlugin>,
}

/// A prompt as offered to clients.
pub struct PromptEntry {
    /// The name clients get it by.
    pub name: String,
    /// The plugin's description (with its own name).
    pub prompt: prompts::Prompt,
    /// The plugin that serves it.
    pub plugin: Arc<LoadedPlugin>,
}

/// One loaded plugin and what it listed.
#[derive(Clone)]
pub struct PluginEntry {
    /// The plugin.
    pub plugin: Arc<LoadedPlugin>,
    /// What it listed at load.
    pub listing: Arc<Listing>,
    /// The input schemas of `listing`'s tools, compiled.
    pub schemas: Arc<ToolSchemas>,
    /// The skills it ships.
    pub skills: Arc<Skills>,
}

impl PluginEntry {
    /// `plugin` with what it listed, its tools' input schemas compiled
    /// (a tool whose schema does not is logged as skipped, once).
    pub fn new(plugin: Arc<LoadedPlugin>, listing: Arc<Listing>, skills: Arc<Skills>) -> Self {
        let schemas = Arc::new(ToolSchemas::compile(plugin.name(), &listing));
        PluginEntry {
            plugin,
            listing,
            schemas,
            skills,
        }
    }

    /// This entry with another plugin or skills, the same lists (and so the
    /// same compiled schemas).
    pub fn with(&self, plugin: Arc<LoadedPlugin>, skills: Arc<Skills>) -> Self {
        PluginEntry {
            plugin,
            listing: self.listing.clone(),
            schemas: self.schemas.clone(),
            skills,
        }
    }
}

/// A tool's input schema, compiled ([`compile_input_schema`]).
struct CompiledSchema {
    /// The schema.
    schema: Arc<serde_json::Value>,
    /// It compiled.
    validator: Arc<jsonschema::Validator>,
    /// What checking arguments against it may cost.
    bound: Arc<super::schema_limits::Bound>,
}

/// The input schemas of a listing's tools, in its order, compiled once per
/// listing: a catalogue rebuilt for another plugin's change (each load,
/// reload and relisting rebuilds it whole) reuses them instead of
/// compiling every tool's schema again. A schema that does not compile is
/// `None` (its tool is skipped).
#[derive(Default)]
pub struct ToolSchemas(Vec<Option<CompiledSchema>>);

impl ToolSchemas {
    /// Compiles the input schema of each tool of `listing`, plugin
    /// `plugin`'s; each that does not compile is logged.
    pub fn compile(plugin: &str, listing: &Listing) -> Self {
        let compiled =
            listing
                .tools
                .iter()
                .map(|tool| match compile_input_schema(&tool.input_schema) {
                    Ok((schema, validator, bound)) => Some(CompiledSchema {
                        schema: Arc::new(schema),
                        validator: Arc::new(validator),
                        bound: Arc::new(bound),
                    }),
                    Err(e) => {
                        tracing::error!(plugin, tool = %tool.name, "tool skipped: {e}");
                        None
                    }
                });
        ToolSchemas(compiled.collect())
    }
}

/// Everything offered, in a deterministic order. Immutable: a change builds
/// a new catalogue and swaps it in whole.
#[derive(Default)]
pub struct Catalogue {
    /// The plugins, by name.
    pub plugins: Vec<PluginEntry>,
    /// Tools, in plugin order then the plugin's own order.
    pub tools: Vec<ToolEntry>,
    /// Fixed-URI resources.
    pub resources: Vec<ResourceEntry>,
    /// Resource templates.
    pub templates: Vec<TemplateEntry>,
    /// Prompts.
    pub prompts: Vec<PromptEntry>,
    /// Skills, in plugin order then by name.
    pub skills: Vec<SkillEntry>,
    /// The plugin set, as one digest (`sha256:…` over each plugin's name
    /// and component digest): hosts serving the same plugins say the same.
    pub plugin_set: String,
    tool_index: HashMap<String, usize>,
    resource_index: HashMap<String, usize>,
    prompt_index: HashMap<String, usize>,
    skill_index: HashMap<String, usize>,
}

/// The digest of `plugins` (sorted by name): `sha256:` over `name=digest`
/// lines.
fn plugin_set(plugins: &[PluginEntry]) -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for entry in plugins {
        digest.update(format!("{}={}\n", entry.plugin.name(), entry.plugin.hash()));
    }
    let hex: String = digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

impl Catalogue {
    /// Merges `plugins` by the naming rules above.
    pub fn build(mut plugins: Vec<PluginEntry>) -> Self {
        plugins.sort_by(|a, b| a.plugin.name().cmp(b.plugin.name()));
        let mut cat = Catalogue::default();
        for entry in &plugins {
            cat.add_tools(entry);
            cat.add_resources(entry);
            cat.add_templates(entry);
            cat.add_prompts(entry);
            cat.add_skills(entry);
        }
        cat.plugin_set = plugin_set(&plugins);
        cat.plugins = plugins;
        cat
    }

    /// The tools of `entry` whose input schema compiles, under unique names.
    fn add_tools(&mut self, entry: &PluginEntry) {
        let plugin = &entry.plugin;
        for (i, tool) in entry.listing.tools.iter().enumerate() {
            let Some(Some(compiled)) = entry.schemas.0.get(i) else {
                continue;
            };
            let (input_schema, validator, schema_bound) = (
                compiled.schema.clone(),
                compiled.validator.clone(),
                compiled.bound.clone(),
            );
            let Some(name) = unique_name(&self.tool_index, plugin.name(), &tool.name, "tool")
            else {
                continue;
            };
            let output_schema = tool
                .output_schema
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok())
                .map(Arc::new);
            let mut tool = tool.clone();
            // Its view is its own plugin's (checked at load) unless an
            // earlier plugin serves that URI: then it has none here.
            if let Some(view) = super::views::view_of(&tool.meta) {
                if let Some(&i) = self.resource_index.get(&view) {
                    tracing::warn!(
                        plugin = plugin.name(), tool = %tool.name,
                        "the tool's view {view} is not shown: plugin {} already serves that URI",
                        self.resources[i].plugin.name()
                    );
                    tool.meta = super::views::without_view(&tool.meta);
                }
            }
            self.tool_index.insert(name.clone(), self.tools.len());
            self.tools.push(ToolEntry {
                name,
                plugin: plugin.clone(),
                header_parameters: header_parameters(&input_schema).into(),
                input_schema,
                validator,
                schema_bound,
                output_schema,
                for_model: super::views::for_model(&tool.meta),
                tool,
            });
        }
    }

    /// The resources of `entry` whose URIs no earlier plugin serves.
    fn add_resources(&mut self, entry: &PluginEntry) {
        let plugin = &entry.plugin;
        for resource in &entry.listing.resources {
            if resource.uri.starts_with(SKILL_SCHEME) {
                tracing::warn!(plugin = plugin.name(), uri = %resource.uri, "resource dropped: skill:// URIs are the host's (ship skills in a .skills folder)");
                continue;
            }
            if let Some(&i) = self.resource_index.get(&resource.uri) {
                tracing::warn!(
                    plugin = plugin.name(), uri = %resource.uri,
                    "resource dropped: plugin {} already serves this URI", self.resources[i].plugin.name()
                );
                continue;
            }
            self.resource_index
                .insert(resource.uri.clone(), self.resources.len());
            self.resources.push(ResourceEntry {
                resource: resource.clone(),
                plugin: plugin.clone(),
                skill_file: None,
            });
        }
    }

    /// The skills of `entry`, and each of their files as a resource (after
    /// every plugin's own resources of the same plugin; a URI the plugin
    /// itself serves keeps the plugin's).
    fn add_skills(&mut self, entry: &PluginEntry) {
        let plugin = &entry.plugin;
        for skill in &entry.skills.skills {
            self.skill_index
                .insert(skill.uri.clone(), self.skills.len());
            self.skills.push(SkillEntry {
                skill: skill.clone(),
                plugin: plugin.clone(),
            });
            for file in &skill.files {
                if self.resource_index.contains_key(&file.uri) {
                    tracing::warn!(plugin = plugin.name(), uri = %file.uri, "skill file not listed as a resource: the URI is taken");
                    continue;
                }
                let is_manifest = file.uri == skill.uri;
                let resource = resources::Resource {
                    uri: file.uri.clone(),
                    name: if is_manifest {
                        skill.name.clone()
                    } else {
                        file.path.clone()
                    },
                    title: None,
                    description: is_manifest.then(|| skill.description().to_owned()),
                    mime_type: Some(file.mime.to_owned()),
                    size: Some(file.bytes.len() as u64),
                    annotations: None,
                    icons: Vec::new(),
                    meta: None,
                };
                self.resource_index
                    .insert(file.uri.clone(), self.resources.len());
                self.resources.push(ResourceEntry {
                    resource,
                    plugin: plugin.clone(),
                    skill_file: Some((skill.clone(), file.clone())),
                });
            }
        }
    }

    /// The templates of `entry` that parse and no earlier plugin serves.
    fn add_templates(&mut self, entry: &PluginEntry) {
        let plugin = &entry.plugin;
        for template in &entry.listing.templates {
            if template.uri_template.starts_with(SKILL_SCHEME) {
                tracing::warn!(plugin = plugin.name(), template = %template.uri_template, "resource template dropped: skill:// URIs are the host's (ship skills in a .skills folder)");
                continue;
            }
            if let Some(other) = self
                .templates
                .iter()
                .find(|t| t.template.uri_template == template.uri_template)
            {
                tracing::warn!(
                    plugin = plugin.name(), template = %template.uri_template,
                    "resource template dropped: plugin {} already serves it", other.plugin.name()
                );
                continue;
            }
            let matcher = match UriTemplate::parse(&template.uri_template) {
                Ok(matcher) => matcher,
                Err(e) => {
                    tracing::error!(plugin = plugin.name(), template = %template.uri_template, "resource template skipped: {e}");
                    continue;
                }
            };
            self.templates.push(TemplateEntry {
                matcher,
                template: template.clone(),
                plugin: plugin.clone(),
            });
        }
    }

    /// The prompts of `entry`, under unique names.
    fn add_prompts(&mut self, entry: &PluginEntry) {
        let plugin = &entry.plugin;
        for prompt in &entry.listing.prompts {
            let Some(name) = unique_name(&self.prompt_index, plugin.name(), &prompt.name, "prompt")
            else {
                continue;
            };
            self.prompt_index.insert(name.clone(), self.prompts.len());
            self.prompts.push(PromptEntry {
                name,
                prompt: prompt.clone(),
                plugin: plugin.clone(),
            });
        }
    }

    /// The tool clients call `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// The loaded plugin called `name`.
    pub fn plugin(&self, name: &str) -> Option<&PluginEntry> {
        self.plugins.iter().find(|p| p.plugin.name() == name)
    }

    /// The prompt clients get as `name`.
    pub fn prompt(&self, name: &str) -> Option<&PromptEntry> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    /// The plugin that serves `uri`: a fixed resource first, then the first
    /// template that matches.
    pub fn resource_owner(&self, uri: &str) -> Option<&Arc<LoadedPlugin>> {
        self.resource_entry(uri).map(|(plugin, _)| plugin)
    }

    /// The plugin that serves `uri` (as [`Catalogue::resource_owner`]),
    /// and what serves it there: the URI of a fixed resource, or the URI
    /// template that matches.
    pub fn resource_entry(&self, uri: &str) -> Option<(&Arc<LoadedPlugin>, &str)> {
        if let Some(&i) = self.resource_index.get(uri) {
            let resource = &self.resources[i];
            return Some((&resource.plugin, &resource.resource.uri));
        }
        self.templates
            .iter()
            .find(|t| t.matcher.matches(uri))
            .map(|t| (&t.plugin, t.template.uri_template.as_str()))
    }

    /// The skill whose `SKILL.md` is at `uri`.
    pub fn skill(&self, uri: &str) -> Option<&SkillEntry> {
        self.skill_index.get(uri).map(|&i| &self.skills[i])
    }

    /// The resource entry listed at exactly `uri`.
    pub fn listed_resource(&self, uri: &str) -> Option<&ResourceEntry> {
        self.resource_index.get(uri).map(|&i| &self.resources[i])
    }

    /// The template with exactly this URI template.
    pub fn template(&self, uri_template: &str) -> Option<&TemplateEntry> {
        self.templates
            .iter()
            .find(|t| t.template.uri_template == uri_template)
    }
}

/// `name`, or `plugin.name` when an earlier plugin took `name`; `None`
/// (logged) when both are taken.
fn unique_name(
    index: &HashMap<String, usize>,
    plugin: &str,
    name: &str,
    kind: &str,
) -> Option<String> {
    if !index.contains_key(name) {
        return Some(name.to_owned());
    }
    let qualified = format!("{plugin}.{name}");
    if index.contains_key(&qualified) {
        tracing::warn!(
            plugin,
            "{kind} {name} dropped: both {name} and {qualified} are taken"
        );
        return None;
    }
    tracing::warn!(
        plugin,
        "{kind} {name} is offered as {qualified}: an earlier plugin already uses {name}"
    );
    Some(qualified)
}

/// The largest compiled form of one schema `pattern`.
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// Why a tool's input schema is refused.
#[derive(Debug, thiserror::Error)]
pub enum InputSchemaError {
    /// Over one of the host's bounds.
    #[error(transparent)]
    Refused(#[from] super::schema_limits::SchemaRefusal),
    /// Not JSON, not an object schema, or not one the schema library reads
    /// (why, in its words).
    #[error("its input schema is invalid: {0}")]
    Invalid(String),
}

/// Compiles, once per process, what checking any input schema needs
/// first: the meta-schema of the default draft (2020-12), which every
/// schema is checked against. The host runs this beside its engine's
/// start, so the first plugin's listing does not wait for it.
pub fn warm_schema_checks() {
    let _ = compile_input_schema(r#"{"type": "object"}"#);
}

/// An input schema parsed, checked against the bounds of
/// [`super::schema_limits`] and compiled, with what checking arguments
/// against it may cost; it must describe an object. It is read in the
/// draft its `$schema` names (zod and the TypeScript SDK write draft-07);
/// without one, or naming a meta-schema this host does not know, in
/// 2020-12. `uniqueItems` is the host's own, in linear time. The error
/// says why, as the end of "tool skipped: ...".
pub fn compile_input_schema(
    schema: &str,
) -> Result<
    (
        serde_json::Value,
        jsonschema::Validator,
        super::schema_limits::Bound,
    ),
    InputSchemaError,
> {
    let invalid = |e: &dyn std::fmt::Display| InputSchemaError::Invalid(e.to_string());
    super::schema_limits::check_size(schema.len())?;
    let value: serde_json::Value = serde_json::from_str(schema).map_err(|e| invalid(&e))?;
    if value.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(invalid(&"an input schema must have \"type\": \"object\""));
    }
    let bound = super::schema_limits::check(&value)?;
    // `pattern`s run on the `regex` crate: linear in the input, so a
    // plugin's schema cannot make validating a request take long.
    let patterns = || {
        jsonschema::PatternOptions::regex()
            .size_limit(MAX_PATTERN_BYTES)
            .dfa_size_limit(MAX_PATTERN_BYTES)
    };
    let unique = super::schema_limits::unique_items_keyword;
    let by_its_draft = jsonschema::options()
        .with_pattern_options(patterns())
        .with_keyword("uniqueItems", unique)
        .build(&value);
    let validator = match by_its_draft {
        Ok(validator) => validator,
        Err(_) if value.get("$schema").is_some() => {
            let mut plain = value.clone();
            if let Some(object) = plain.as_object_mut() {
                object.remove("$schema");
            }
            jsonschema::draft202012::options()
                .with_pattern_options(patterns())
                .with_keyword("uniqueItems", unique)
                .build(&plain)
                .map_err(|e| invalid(&e))?
        }
        Err(e) => return Err(invalid(&e)),
    };
    Ok((value, validator, bound))
}

#[cfg(test)]
mod schema_tests {
    use super::compile_input_schema;

    #[test]
    fn a_schema_that_refers_to_itself_neither_hangs_nor_crashes() {
        for schema in [
            r##"{"type":"object","allOf":[{"$ref":"#"}]}"##,
            r##"{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}"##,
            r##"{"type":"object","properties":{"next":{"$ref":"#"}}}"##,
        ] {
            if let Ok((_, v, _)) = compile_input_schema(schema) {
                let _ = v.is_valid(&serde_json::json!({"x": 1, "next": {"next": {}}}));
            }
        }
    }

    #[test]
    fn schemas_are_read_in_the_draft_they_name() {
        for meta in [
            Some("http://json-schema.org/draft-04/schema#"),
            Some("http://json-schema.org/draft-06/schema#"),
            Some("http://json-schema.org/draft-07/schema#"),
            Some("https://json-schema.org/draft/2019-09/schema"),
            Some("https://json-schema.org/draft/2020-12/schema"),
            Some("https://example.com/my-meta"),
            Some("not a url"),
            None,
        ] {
            let declared = meta.map_or(String::new(), |m| format!(r#""$schema":"{m}","#));
            let schema = format!(
                r#"{{{declared}"type":"object","properties":{{"a":{{"type":"string"}},"b":{{"type":"array","items":{{"type":"object","required":["c"]}}}}}},"required":["a"]}}"#
            );
            let (_, v, _) = compile_input_schema(&schema).unwrap();
            let check = |args: serde_json::Value| v.is_valid(&args);
            assert!(
                !check(serde_json::json!({})),
                "{meta:?}: a missing property"
            );
            assert!(
                !check(serde_json::json!({"a": 1})),
                "{meta:?}: a wrong type"
            );
            assert!(
                !check(serde_json::json!({"a": "x", "b": [{}]})),
                "{meta:?}: a nested required"
            );
            assert!(
                check(serde_json::json!({"a": "x", "b": [{"c": 1}]})),
                "{meta:?}"
            );
        }
    }
}
