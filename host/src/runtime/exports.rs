//! The contract's exported functions, each looked up once per component
//! and called with the Rust types of its signature; the types are checked
//! against the component once, when it loads.

use super::bindings::exports::wasm_mcp::plugin::completions;
use super::lift::{self, BoundedList, IntoOwned};
use super::plain::PlainTools;
use super::state::CallState;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use wasmtime::component::{
    Component, ComponentExportIndex, ComponentNamedList, ComponentType, Instance, Lift, Lower,
    TypedFunc,
};
use wasmtime::{Engine, Store};

/// The Rust types an export is called with: its parameters and its result.
pub(super) trait Signature {
    /// The parameters, borrowed from the caller.
    type Params<'a>: ComponentNamedList + Lower + Send + Sync;
    /// The result, lifted under the plugin's limits.
    type Result: ComponentType + Lift + IntoOwned + Send + Sync + 'static;
}

macro_rules! signatures {
    ($($(#[$doc:meta])* $name:ident: ($($param:ty),*) -> $result:ty;)*) => {$(
        $(#[$doc])*
        pub(super) struct $name;
        impl Signature for $name {
            type Params<'a> = ($($param,)*);
            type Result = $result;
        }
    )*};
}

signatures! {
    /// `tools.list-tools`
    ListTools: () -> BoundedList<lift::Tool>;
    /// `tools.call-tool`: the tool's name and its JSON arguments.
    CallTool: (&'a str, &'a str) -> Result<lift::CallResult, lift::Error>;
    /// `resources.list-resources`
    ListResources: () -> BoundedList<lift::Resource>;
    /// `resources.list-resource-templates`
    ListTemplates: () -> BoundedList<lift::ResourceTemplate>;
    /// `resources.read-resource`: the URI.
    ReadResource: (&'a str) -> Result<BoundedList<lift::ResourceContents>, lift::Error>;
    /// `prompts.list-prompts`
    ListPrompts: () -> BoundedList<lift::Prompt>;
    /// `prompts.get-prompt`: the prompt's name and its arguments.
    GetPrompt: (&'a str, &'a [(String, String)]) -> Result<lift::PromptResult, lift::Error>;
    /// `completions.complete`
    Complete: (&'a completions::CompletionRequest) -> Result<lift::Completion, lift::Error>;
}

/// An export of one of the contract's interfaces whose type is not the
/// contract's: the component cannot be served.
#[derive(Debug, thiserror::Error)]
#[error("its export `{function}` of {interface} does not have the contract's type ({detail})")]
pub(super) struct WrongType {
    interface: String,
    function: &'static str,
    detail: String,
}

/// One exported function of a component, called as `S`.
pub(super) struct Export<S> {
    index: ComponentExportIndex,
    /// `wasm-mcp:plugin/{interface}@0.1.0`, and the function's name in it.
    interface: String,
    function: &'static str,
    /// Set once [`Export::check`] found the export's type to be `S`'s.
    /// Every instance of a component has the same export types, so calls
    /// need not check again (the check is a walk of the result type, about
    /// 3% of a small tool call).
    checked: AtomicBool,
    signature: PhantomData<fn() -> S>,
}

impl<S: Signature> Export<S> {
    fn new(index: ComponentExportIndex, interface: String, function: &'static str) -> Self {
        Export {
            index,
            interface,
            function,
            checked: AtomicBool::new(false),
            signature: PhantomData,
        }
    }

    /// Checks the export's type in `instance` against `S`'s (once per
    /// component): a mismatch is a [`WrongType`].
    fn check(&self, store: &mut Store<CallState>, instance: Instance) -> wasmtime::Result<()> {
        if self.checked.load(Ordering::Acquire) {
            return Ok(());
        }
        instance
            .get_typed_func::<S::Params<'_>, (S::Result,)>(&mut *store, self.index)
            .map_err(|e| {
                wasmtime::Error::new(WrongType {
                    interface: self.interface.clone(),
                    function: self.function,
                    detail: format!("{e:#}"),
                })
            })?;
        self.checked.store(true, Ordering::Release);
        Ok(())
    }

    /// Calls the export in `instance` with `params`.
    pub(super) async fn call(
        &self,
        store: &mut Store<CallState>,
        instance: Instance,
        params: S::Params<'_>,
    ) -> wasmtime::Result<<S::Result as IntoOwned>::Owned> {
        self.check(store, instance)?;
        let func = instance
            .get_func(&mut *store, self.index)
            .ok_or_else(|| wasmtime::format_err!("failed to find function export"))?;
        // SAFETY: `check` found this export's type to be `S`'s, in an
        // instance of the component `self.index` belongs to; `func` is from
        // an instance of that component too (`get_func` finds nothing in
        // another's). An export's type is the component's, the same in all
        // its instances.
        let func = unsafe { TypedFunc::<S::Params<'_>, (S::Result,)>::new_unchecked(func) };
        let (value,) = func.call_async(&mut *store, params).await?;
        Ok(value.into_owned())
    }
}

/// Each interface's functions, when the component exports all of them.
#[derive(Default)]
pub(super) struct ExportedFunctions {
    pub(super) tools: Option<(Export<ListTools>, Export<CallTool>)>,
    pub(super) resources: Option<(
        Export<ListResources>,
        Export<ListTemplates>,
        Export<ReadResource>,
    )>,
    pub(super) prompts: Option<(Export<ListPrompts>, Export<GetPrompt>)>,
    pub(super) completions: Option<Export<Complete>>,
    /// A plain component's functions, served as tools, when it exports
    /// none of the contract's interfaces.
    pub(super) plain: Option<PlainTools>,
}

/// The contract's interfaces a component may export (as
/// `wasm-mcp:plugin/NAME@0.1.0`), each with the functions it must have.
const INTERFACES: &[(&str, &[&str])] = &[
    ("tools", &["list-tools", "call-tool"]),
    (
        "resources",
        &["list-resources", "list-resource-templates", "read-resource"],
    ),
    ("prompts", &["list-prompts", "get-prompt"]),
    ("completions", &["complete"]),
    ("types", &[]),
];

impl ExportedFunctions {
    /// The contract's functions `component` exports. A component that
    /// exports an interface of the contract's package is refused when the
    /// interface is not one of this contract's (another version, an
    /// unknown name) or lacks one of its functions: it is not served as
    /// something else (a plain component's tools).
    pub(super) fn find(component: &Component, engine: &Engine) -> anyhow::Result<Self> {
        for (name, _) in component.component_type().exports(engine) {
            let Some(interface) = name.strip_prefix("wasm-mcp:plugin/") else {
                continue;
            };
            let known = INTERFACES
                .iter()
                .find(|(known, _)| interface.strip_prefix(known) == Some("@0.1.0"));
            let Some((_, functions)) = known else {
                anyhow::bail!(
                    "it exports `{name}`, which is not an interface of the contract this host \
                     serves (wasm-mcp:plugin@0.1.0: tools, resources, prompts, completions)"
                );
            };
            let index = component.get_export_index(None, name);
            let has = |function: &str| {
                index
                    .as_ref()
                    .is_some_and(|i| component.get_export_index(Some(i), function).is_some())
            };
            if let Some(missing) = functions.iter().find(|f| !has(f)) {
                anyhow::bail!("its export `{name}` lacks the contract's function `{missing}`");
            }
        }
        Ok(Self::of_contract(component))
    }

    fn of_contract(component: &Component) -> Self {
        fn func<S: Signature>(
            component: &Component,
            interface: &str,
            name: &'static str,
        ) -> Option<Export<S>> {
            let interface = format!("wasm-mcp:plugin/{interface}@0.1.0");
            let index = component.get_export_index(None, &interface)?;
            component
                .get_export_index(Some(&index), name)
                .map(|index| Export::new(index, interface, name))
        }
        let c = component;
        ExportedFunctions {
            tools: func(c, "tools", "list-tools").zip(func(c, "tools", "call-tool")),
            resources: match (
                func(c, "resources", "list-resources"),
                func(c, "resources", "list-resource-templates"),
                func(c, "resources", "read-resource"),
            ) {
                (Some(a), Some(b), Some(c)) => Some((a, b, c)),
                _ => None,
            },
            prompts: func(c, "prompts", "list-prompts").zip(func(c, "prompts", "get-prompt")),
            completions: func(c, "completions", "complete"),
            plain: None,
        }
    }

    /// Checks every export's type against the contract's (see
    /// [`WrongType`]), in an instance of the component, so that a
    /// component with a wrongly typed export fails to load instead of
    /// failing the calls of that export.
    pub(super) fn check(
        &self,
        store: &mut Store<CallState>,
        instance: Instance,
    ) -> wasmtime::Result<()> {
        if let Some((list, call)) = &self.tools {
            list.check(store, instance)?;
            call.check(store, instance)?;
        }
        if let Some((list, templates, read)) = &self.resources {
            list.check(store, instance)?;
            templates.check(store, instance)?;
            read.check(store, instance)?;
        }
        if let Some((list, get)) = &self.prompts {
            list.check(store, instance)?;
            get.check(store, instance)?;
        }
        if let Some(complete) = &self.completions {
            complete.check(store, instance)?;
        }
        Ok(())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.tools.is_none()
            && self.resources.is_none()
            && self.prompts.is_none()
            && self.plain.is_none()
    }
}
