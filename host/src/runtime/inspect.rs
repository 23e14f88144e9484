//! `wasm-mcp inspect`: what a component offers and what it imports.

use super::engine::Runtime;
use wasmtime::component::types::{ComponentExtern, ComponentItem};

/// The imports and exports of a component, by name.
#[derive(Debug, Clone, Default)]
pub struct ComponentDescription {
    /// Imported interfaces and functions.
    pub imports: Vec<String>,
    /// Exported interfaces and functions.
    pub exports: Vec<String>,
}

/// Compiles `bytes` (without caching) and lists its imports and exports.
pub fn describe(runtime: &Runtime, bytes: &[u8]) -> anyhow::Result<ComponentDescription> {
    let component = super::tier::compile_optimized(runtime.engine(), bytes)?;
    let ty = component.component_type();
    let engine = runtime.engine();
    let name = |(name, item): (&str, ComponentExtern<'_>)| match item.ty {
        ComponentItem::ComponentInstance(_) => format!("{name} (interface)"),
        ComponentItem::ComponentFunc(_) => format!("{name} (function)"),
        ComponentItem::Resource(_) => format!("{name} (resource)"),
        _ => name.to_owned(),
    };
    Ok(ComponentDescription {
        imports: ty.imports(engine).map(name).collect(),
        exports: ty.exports(engine).map(name).collect(),
    })
}
