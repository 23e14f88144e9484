//! Plain components: a component that exports ordinary functions and none
//! of the contract's interfaces is served anyway, each function as a tool.
//! Its input schema comes from the parameters' WIT types ([`schema`]),
//! its description from the WIT docs when the component carries them
//! ([`docs`]), and arguments and results cross as JSON ([`value`]).
//!
//! Functions exported by the world are tools of the same name; those of an
//! exported interface `ns:pkg/iface@version` are `iface.function`.
//! Interfaces of `wasi:` (a command's `run`, an HTTP handler) are not tools.

mod docs;
mod schema;
mod value;

use crate::runtime::bindings::exports::wasm_mcp::plugin::tools;
use crate::runtime::bindings::wasm_mcp::plugin::types;
use crate::runtime::lift::OverBudget;
pub use docs::{custom_section_bytes, has_package_docs, Docs};
use schema::{Schema, SchemaWriter, Unsupported};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Write;
use value::{Json, Lowering, LoweringError};
use wasmtime::component::types::{ComponentFunc, ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex, Instance, Val};
use wasmtime::{Engine, Store};

/// The most functions left out that are logged one by one at load.
const MAX_LOGGED: usize = 16;

/// One exported function, served as a tool.
struct Function {
    tool: tools::Tool,
    index: ComponentExportIndex,
    params: Vec<(String, Type)>,
    result: Option<Type>,
}

/// The functions of a plain component that can be served as tools.
pub struct PlainTools {
    functions: Vec<Function>,
}

/// Why a plain call produced no result.
#[derive(Debug, thiserror::Error)]
pub enum PlainError {
    /// The arguments are not JSON.
    #[error("{0}")]
    NotJson(#[from] serde_json::Error),
    /// The arguments do not fit the parameters' types.
    #[error("{0}")]
    Arguments(#[from] LoweringError),
    /// No function is exported under this tool name.
    #[error("no tool named `{0}`")]
    NoTool(String),
    /// The result is larger than the plugin's result limit.
    #[error("the result is over this plugin's limit of {0} bytes")]
    TooLarge(usize),
}

impl PlainTools {
    /// The component's exported functions that have a JSON form: at most
    /// `max_tools` of them, whose descriptions and schemas take at most
    /// `max_bytes` (as a contract plugin's listing; a small component could
    /// otherwise describe huge schemas by reusing one type everywhere).
    /// Each function left out is logged with the reason.
    pub fn find(
        component: &Component,
        engine: &Engine,
        bytes: &[u8],
        plugin: &str,
        (max_tools, max_bytes): (usize, usize),
    ) -> Self {
        let docs = Docs::read(bytes);
        let mut functions = Vec::new();
        let mut listed_bytes = 0usize;
        let mut left_out = 0usize;
        let mut leave_out = |function: &str, why: &dyn std::fmt::Display| {
            left_out += 1;
            if left_out <= MAX_LOGGED {
                tracing::warn!(plugin, function, "not served as a tool: {why}");
            }
        };
        let mut add =
            |tool_name: String, interface: Option<&str>, name: &str, func: ComponentFunc, index| {
                if functions.len() >= max_tools {
                    let why = format!("the plugin already has {max_tools} tools");
                    return leave_out(&tool_name, &why);
                }
                let description = docs.function(interface, name);
                match Function::new(tool_name.clone(), func, index, description) {
                    Ok(function) if listed_bytes + function.listed_bytes() > max_bytes => {
                        let why = format!("the plugin's tools are already near {max_bytes} bytes");
                        leave_out(&tool_name, &why);
                    }
                    Ok(function) => {
                        listed_bytes += function.listed_bytes();
                        functions.push(function);
                    }
                    Err(why) => leave_out(&tool_name, &why),
                }
            };
        for (name, item) in component.component_type().exports(engine) {
            match item.ty {
                ComponentItem::ComponentFunc(func) => {
                    let Some(index) = component.get_export_index(None, name) else {
                        continue;
                    };
                    add(name.to_owned(), None, name, func, index);
                }
                ComponentItem::ComponentInstance(instance) if !name.starts_with("wasi:") => {
                    let Some(parent) = component.get_export_index(None, name) else {
                        continue;
                    };
                    let short = interface_name(name);
                    for (func_name, item) in instance.exports(engine) {
                        let ComponentItem::ComponentFunc(func) = item.ty else {
                            continue;
                        };
                        let Some(index) = component.get_export_index(Some(&parent), func_name)
                        else {
                            continue;
                        };
                        add(
                            format!("{short}.{func_name}"),
                            Some(short),
                            func_name,
                            func,
                            index,
                        );
                    }
                }
                _ => {}
            }
        }
        if left_out > MAX_LOGGED {
            tracing::warn!(
                plugin,
                "{left_out} functions in all are not served as tools"
            );
        }
        PlainTools { functions }
    }

    /// Whether no function can be served.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// The tools, as a contract plugin would list them.
    pub fn tools(&self) -> Vec<tools::Tool> {
        self.functions.iter().map(|f| f.tool.clone()).collect()
    }

    /// The component values that JSON `arguments` of tool `name` become
    /// (how many), or why they do not fit; what a call does before it
    /// enters the component (for the `plain_arguments` fuzz target).
    pub fn lower_arguments(&self, name: &str, arguments: &str) -> Result<usize, PlainError> {
        let function = self
            .functions
            .iter()
            .find(|f| f.tool.name == name)
            .ok_or_else(|| PlainError::NoTool(name.to_owned()))?;
        function.arguments(arguments).map(|values| values.len())
    }

    /// Calls tool `name` with JSON `arguments`: `Ok(Err(_))` when there is
    /// no such tool or the arguments do not fit.
    pub async fn call(
        &self,
        store: &mut Store<impl Send>,
        instance: Instance,
        name: &str,
        arguments: &str,
        max_result_bytes: usize,
    ) -> wasmtime::Result<Result<tools::CallResult, types::Error>> {
        let Some(function) = self.functions.iter().find(|f| f.tool.name == name) else {
            return Ok(Err(types::Error::NotFound(
                PlainError::NoTool(name.to_owned()).to_string(),
            )));
        };
        let params = match function.arguments(arguments) {
            Ok(params) => params,
            Err(e) => return Ok(Err(types::Error::InvalidParams(e.to_string()))),
        };
        let func = instance
            .get_func(&mut *store, function.index)
            .ok_or_else(|| wasmtime::format_err!("the function `{name}` is not exported"))?;
        let mut results = vec![Val::Bool(false); usize::from(function.result.is_some())];
        func.call_async(&mut *store, &params, &mut results).await?;
        // Over the limit is an error of the call, as for contract plugins.
        result(results.pop(), max_result_bytes)
            .map(Ok)
            .map_err(|e| wasmtime::Error::new(OverBudget(e.to_string())))
    }
}

impl Function {
    fn new(
        name: String,
        func: ComponentFunc,
        index: ComponentExportIndex,
        docs: Option<String>,
    ) -> Result<Self, Unsupported> {
        if func.async_() {
            return Err(Unsupported::Kind("an async function"));
        }
        let mut writer = SchemaWriter::new();
        writer.charge(func.params().len(), func.params().map(|(n, _)| n))?;
        let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_owned(), t)).collect();
        let result = func.results().next();
        let input = writer.object(params.iter().map(|(n, t)| (n.as_str(), t.clone())), 0)?;
        let output = match &result {
            Some(Type::Result(r)) => r.ok(),
            other => other.clone(),
        };
        let output = match output {
            Some(ty) => Some(Schema::object(
                BTreeMap::from([("result".to_owned(), writer.of(&ty, 1)?)]),
                vec!["result".to_owned()],
            )),
            None => None,
        };
        if let Some(Type::Result(r)) = &result {
            if let Some(err) = r.err() {
                writer.of(&err, 1)?;
            }
        }
        let description =
            docs.unwrap_or_else(|| format!("Calls the component's function `{name}`."));
        Ok(Function {
            tool: tools::Tool {
                name,
                title: None,
                description: Some(description),
                input_schema: input.to_string(),
                output_schema: output.map(|o| o.to_string()),
                annotations: None,
                task_support: tools::TaskSupport::Optional,
                icons: Vec::new(),
                meta: None,
            },
            index,
            params,
            result,
        })
    }

    /// The bytes of its listing's texts.
    fn listed_bytes(&self) -> usize {
        let tool = &self.tool;
        tool.name.len()
            + tool.description.as_ref().map_or(0, String::len)
            + tool.input_schema.len()
            + tool.output_schema.as_ref().map_or(0, String::len)
    }

    /// The JSON arguments as the parameters' values, in order.
    fn arguments(&self, arguments: &str) -> Result<Vec<Val>, PlainError> {
        let json: Value = if arguments.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(arguments)?
        };
        let members = self.params.iter().map(|(n, t)| (n.as_str(), t.clone()));
        let values = Lowering::new().members(members, &json)?;
        Ok(values.into_iter().map(|(_, v)| v).collect())
    }
}

/// The tool result of a function's return value: a `string` is the text
/// itself, anything else its JSON; `structuredContent` is
/// `{"result": value}`. An `err` of a `result` is a tool error.
fn result(value: Option<Val>, max_bytes: usize) -> Result<tools::CallResult, PlainError> {
    let text = |value: &Val| -> Result<String, PlainError> {
        match value {
            Val::String(s) if s.len() <= max_bytes => Ok(s.clone()),
            Val::String(_) => Err(PlainError::TooLarge(max_bytes)),
            other => json_text(other, max_bytes),
        }
    };
    let content = |text: String| {
        vec![types::Content::Text(types::TextContent {
            text,
            annotations: None,
            meta: None,
        })]
    };
    let (value, is_error) = match value {
        None => return Ok(call_result(Vec::new(), None, false)),
        Some(Val::Result(Ok(None))) => return Ok(call_result(Vec::new(), None, false)),
        Some(Val::Result(Err(None))) => {
            return Ok(call_result(
                content("the function returned an error".into()),
                None,
                true,
            ))
        }
        Some(Val::Result(Ok(Some(v)))) => (*v, false),
        Some(Val::Result(Err(Some(e)))) => (*e, true),
        Some(v) => (v, false),
    };
    if is_error {
        return Ok(call_result(content(text(&value)?), None, true));
    }
    let json = json_text(&value, max_bytes)?;
    let structured = format!("{{\"result\":{json}}}");
    let text = match value {
        Val::String(s) => s,
        _ => json,
    };
    // The value goes out twice (text and structured content): both count.
    if text.len() + structured.len() > max_bytes {
        return Err(PlainError::TooLarge(max_bytes));
    }
    Ok(call_result(content(text), Some(structured), false))
}

fn call_result(
    content: Vec<types::Content>,
    structured: Option<String>,
    is_error: bool,
) -> tools::CallResult {
    tools::CallResult {
        content,
        structured_content: structured,
        is_error,
        meta: None,
    }
}

/// `value` as JSON text, failing past `max_bytes`.
fn json_text(value: &Val, max_bytes: usize) -> Result<String, PlainError> {
    struct Capped(Vec<u8>, usize);
    impl Write for Capped {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + bytes.len() > self.1 {
                return Err(std::io::Error::other("over the limit"));
            }
            self.0.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new(), max_bytes);
    serde_json::to_writer(&mut out, &Json(value)).map_err(|_| PlainError::TooLarge(max_bytes))?;
    Ok(String::from_utf8(out.0).expect("serde_json writes UTF-8"))
}

/// `iface` of `ns:pkg/iface@version`.
fn interface_name(name: &str) -> &str {
    let name = name.split('@').next().unwrap_or(name);
    name.rsplit('/').next().unwrap_or(name)
}
