//! The registry and its catalogue with real components: the example
//! plugins that `scripts/build` puts in `dist/` (run it first).

use super::{Registry, Reload};
use crate::runtime::host_types::ListKind;
use crate::runtime::{ComponentSource, Grants, Runtime, RuntimeConfig};
use std::sync::Arc;

pub(crate) fn registry() -> Arc<Registry> {
    let runtime = Runtime::new(RuntimeConfig {
        max_instances: 8,
        ..RuntimeConfig::default()
    })
    .expect("the runtime starts");
    Arc::new(Registry::new(runtime))
}

/// An example component from `dist/`: `hello` has the tools `greet`, `add`
/// and `countdown`; `notes` the resource `notes://index`, the template
/// `notes://note/{id}` and the prompt `summarize`.
async fn component(name: &str) -> ComponentSource {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dist/plugins")
        .join(format!("{name}.wasm"));
    let bytes = tokio::fs::read(&path)
        .await
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/build makes it)", path.display()));
    ComponentSource::new(bytes)
}

pub(crate) async fn entry(
    registry: &Registry,
    name: &str,
    component_name: &str,
) -> super::PluginEntry {
    registry
        .load(
            name,
            component(component_name).await,
            Grants::default(),
            true,
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn later_plugins_by_name_yield_names_and_uris_to_earlier_ones() {
    let registry = registry();
    let entries = vec![
        entry(&registry, "b-hello", "hello").await,
        entry(&registry, "z-notes", "notes").await,
        entry(&registry, "a-hello", "hello").await,
        entry(&registry, "notes", "notes").await,
    ];
    for entry in entries {
        registry.install(entry);
    }
    let catalogue = registry.catalogue();
    let plugins: Vec<_> = catalogue.plugins.iter().map(|p| p.plugin.name()).collect();
    assert_eq!(plugins, ["a-hello", "b-hello", "notes", "z-notes"]);

    // A clashing tool or prompt is offered as `<plugin>.<name>`.
    let tools: Vec<_> = catalogue.tools.iter().map(|t| t.name.as_str()).collect();
    let hello = ["greet", "add", "countdown"];
    let later = hello.map(|tool| format!("b-hello.{tool}"));
    assert_eq!(
        tools,
        [&hello[..], &later.each_ref().map(String::as_str)[..]].concat()
    );
    assert_eq!(catalogue.tool("greet").unwrap().plugin.name(), "a-hello");
    assert_eq!(catalogue.tool("b-hello.greet").unwrap().tool.name, "greet");
    let prompts: Vec<_> = catalogue.prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(prompts, ["summarize", "z-notes.summarize"]);
    assert_eq!(
        catalogue.prompt("z-notes.summarize").unwrap().plugin.name(),
        "z-notes"
    );

    // A clashing URI or template is dropped from the later plugin.
    assert_eq!(catalogue.resources.len(), 1);
    assert_eq!(catalogue.templates.len(), 1);
    assert_eq!(catalogue.templates[0].plugin.name(), "notes");
    let owner = |uri| catalogue.resource_owner(uri).map(|p| p.name().to_owned());
    assert_eq!(owner("notes://index").as_deref(), Some("notes"));
    assert_eq!(owner("notes://note/7").as_deref(), Some("notes"));
    assert_eq!(owner("notes://note/7/x"), None);
    assert_eq!(owner("notes://other"), None);
    // The input schema is parsed once, at load.
    let schema = &catalogue.tool("greet").unwrap().input_schema;
    assert_eq!(schema["required"], serde_json::json!(["name"]));
}

#[tokio::test]
async fn a_plugin_s_schemas_are_compiled_once_whatever_else_changes() {
    let registry = registry();
    registry.install(entry(&registry, "hello", "hello").await);
    let validators = |registry: &Registry| -> Vec<Arc<jsonschema::Validator>> {
        let catalogue = registry.catalogue();
        let tools = catalogue
            .tools
            .iter()
            .filter(|t| t.plugin.name() == "hello");
        tools.map(|t| t.validator.clone()).collect()
    };
    let before = validators(&registry);
    assert!(!before.is_empty());
    // Another plugin's arrival rebuilds the catalogue whole: hello's
    // tools keep the validators compiled when it loaded.
    registry.install(entry(&registry, "notes", "notes").await);
    let after = validators(&registry);
    assert_eq!(before.len(), after.len());
    assert!(before.iter().zip(&after).all(|(a, b)| Arc::ptr_eq(a, b)));
}

#[tokio::test]
async fn a_change_names_exactly_the_lists_that_differ() {
    let registry = registry();
    let hello = entry(&registry, "hello", "hello").await;
    let notes = entry(&registry, "notes", "notes").await;
    assert_eq!(registry.install(hello.clone()).lists, [ListKind::Tools]);
    assert_eq!(
        registry.install(notes.clone()).lists,
        [ListKind::Resources, ListKind::Prompts]
    );
    // The same plugin again, or its same listing again: nothing to tell.
    assert!(registry.install(notes.clone()).lists.is_empty());
    assert!(registry.relisted(notes).unwrap().lists.is_empty());
    assert_eq!(registry.remove("hello").unwrap().lists, [ListKind::Tools]);
    assert!(registry.remove("hello").is_none());
    // A listing of a version no longer loaded changes nothing.
    assert!(registry.relisted(hello).is_none());
    assert!(registry.catalogue().tools.is_empty());
}

#[tokio::test]
async fn an_update_adds_keeps_replaces_and_removes_and_a_bad_version_changes_nothing() {
    let registry = registry();
    let hello = || async { Some((component("hello").await, Grants::default(), Arc::default())) };
    let added = registry.update_plugin("p", hello().await).await.unwrap();
    assert!(matches!(added, Reload::Added(ref c) if c.lists == [ListKind::Tools]));
    assert!(matches!(
        registry.update_plugin("p", hello().await).await.unwrap(),
        Reload::Unchanged
    ));

    let broken = Some((
        ComponentSource::new(b"\0asm not a component".to_vec()),
        Grants::default(),
        Arc::default(),
    ));
    assert!(registry.update_plugin("p", broken).await.is_err());
    assert_eq!(
        registry.catalogue().tool("greet").unwrap().plugin.name(),
        "p"
    );

    // New skills, the same component: taken without a reload.
    let folder = tempfile::tempdir().unwrap();
    let skill = folder.path().join("greeting");
    std::fs::create_dir(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greeting\ndescription: Greets\n---\n",
    )
    .unwrap();
    let skills = Arc::new(crate::skills::read_folder(
        folder.path(),
        "p",
        &Default::default(),
    ));
    let loaded = registry.catalogue().plugin("p").unwrap().plugin.clone();
    let (source, grants) = (component("hello").await, Grants::default());
    let reskilled = registry
        .update_plugin("p", Some((source, grants, skills.clone())))
        .await
        .unwrap();
    assert!(matches!(reskilled, Reload::Reskilled(ref c) if c.lists == [ListKind::Resources]));
    let catalogue = registry.catalogue();
    assert!(Arc::ptr_eq(&catalogue.plugin("p").unwrap().plugin, &loaded));
    assert_eq!(
        catalogue
            .skill("skill://p/greeting/SKILL.md")
            .unwrap()
            .skill
            .name,
        "greeting"
    );
    assert!(catalogue
        .resource_entry("skill://p/greeting/SKILL.md")
        .is_some());
    let again = Some((component("hello").await, Grants::default(), skills));
    assert!(matches!(
        registry.update_plugin("p", again).await.unwrap(),
        Reload::Unchanged
    ));

    let notes = Some((component("notes").await, Grants::default(), Arc::default()));
    let replaced = registry.update_plugin("p", notes).await.unwrap();
    let everything = [ListKind::Tools, ListKind::Resources, ListKind::Prompts];
    assert!(matches!(replaced, Reload::Replaced(ref c) if c.lists == everything));
    assert!(registry.catalogue().tool("greet").is_none());

    assert!(registry.catalogue().skills.is_empty());
    let removed = registry.update_plugin("p", None).await.unwrap();
    assert!(
        matches!(removed, Reload::Removed(ref c) if c.lists == [ListKind::Resources, ListKind::Prompts])
    );
    assert!(matches!(
        registry.update_plugin("p", None).await.unwrap(),
        Reload::Unchanged
    ));
    assert!(registry.catalogue().plugins.is_empty());
}
