//! Write [wasm-mcp](https://github.com/) plugins in Rust.
//!
//! A plugin is a list of tools, resources, templates, prompts and completions
//! built with [`Plugin`], exported with [`export_plugin!`], and compiled with
//! `cargo build --target wasm32-wasip2`:
//!
//! ```ignore
//! use wasm_mcp_sdk::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add { /// The first number.
//!     a: f64, /// The second number.
//!     b: f64 }
//!
//! fn plugin() -> Plugin {
//!     Plugin::new().tool("add", "Adds two numbers", |x: Add| (x.a + x.b).to_string())
//! }
//! export_plugin!(plugin);
//! ```
//!
//! The SDK derives each tool's input schema from its argument type, parses
//! and validates JSON, and converts results to the WIT contract's types.
//! [`keyvalue`] is the plugin's key-value store, where the operator grants
//! it.

pub mod bindings {
    //! The raw bindings of the `wasm-mcp:plugin@0.1.0` contract, and of
    //! `wasi:keyvalue@0.2.0-draft2` that its worlds import.
    wit_bindgen::generate!({
        path: "wit",
        world: "wasm-mcp:plugin/plugin@0.1.0",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "::wasm_mcp_sdk::bindings",
        // The key-value store every world imports (see `keyvalue`).
        with: {
            "wasi:keyvalue/store@0.2.0-draft2": generate,
            "wasi:keyvalue/atomics@0.2.0-draft2": generate,
            "wasi:keyvalue/batch@0.2.0-draft2": generate,
        },
    });
}

mod content;
pub mod host;
pub mod keyvalue;
mod plugin;
mod prompt;
mod resource;
mod schema;
mod tool;

#[doc(hidden)]
pub mod __private;

pub use content::{audio, embedded, image, text, Content, ResourceContents};
pub use plugin::Plugin;
pub use prompt::Prompt;
pub use prompt::{assistant, user, IntoMessages, PromptMessage};
pub use resource::{IntoContents, Resource, Template, UriVars, VIEW_MIME_TYPE};
pub use tool::{
    error_result, CallResult, IntoCallResult, Structured, TaskSupport, Tool, ToolAnnotations,
};

/// Everything a plugin usually needs, in one `use`.
pub mod prelude {
    pub use crate::{
        assistant, audio, embedded, error_result, export_plugin, host, image, keyvalue, text, user,
        CallResult, Content, Plugin, PromptMessage, Resource, ResourceContents, Structured,
        TaskSupport, Template, Tool, ToolAnnotations, UriVars,
    };
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
}

pub use schemars;
pub use serde;
pub use serde_json;

/// Exports a plugin: give it a function that builds the [`Plugin`].
///
/// The function runs once per instance, and the host makes a fresh instance
/// per request, so keep it cheap (no I/O).
#[macro_export]
macro_rules! export_plugin {
    ($build:path) => {
        struct __WasmMcpPlugin;

        impl $crate::bindings::exports::wasm_mcp::plugin::tools::Guest for __WasmMcpPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::bindings::exports::wasm_mcp::plugin::tools::Tool> {
                $crate::__private::list_tools(&$build())
            }
            fn call_tool(
                name: ::std::string::String,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<
                $crate::bindings::exports::wasm_mcp::plugin::tools::CallResult,
                $crate::bindings::wasm_mcp::plugin::types::Error,
            > {
                $crate::__private::call_tool(&$build(), &name, &arguments)
            }
        }

        impl $crate::bindings::exports::wasm_mcp::plugin::resources::Guest for __WasmMcpPlugin {
            fn list_resources() -> ::std::vec::Vec<$crate::bindings::exports::wasm_mcp::plugin::resources::Resource> {
                $crate::__private::list_resources(&$build())
            }
            fn list_resource_templates(
            ) -> ::std::vec::Vec<$crate::bindings::exports::wasm_mcp::plugin::resources::ResourceTemplate> {
                $crate::__private::list_resource_templates(&$build())
            }
            fn read_resource(
                uri: ::std::string::String,
            ) -> ::std::result::Result<
                ::std::vec::Vec<$crate::bindings::wasm_mcp::plugin::types::ResourceContents>,
                $crate::bindings::wasm_mcp::plugin::types::Error,
            > {
                $crate::__private::read_resource(&$build(), &uri)
            }
        }

        impl $crate::bindings::exports::wasm_mcp::plugin::prompts::Guest for __WasmMcpPlugin {
            fn list_prompts() -> ::std::vec::Vec<$crate::bindings::exports::wasm_mcp::plugin::prompts::Prompt> {
                $crate::__private::list_prompts(&$build())
            }
            fn get_prompt(
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::result::Result<
                $crate::bindings::exports::wasm_mcp::plugin::prompts::PromptResult,
                $crate::bindings::wasm_mcp::plugin::types::Error,
            > {
                $crate::__private::get_prompt(&$build(), &name, arguments)
            }
        }

        impl $crate::bindings::exports::wasm_mcp::plugin::completions::Guest for __WasmMcpPlugin {
            fn complete(
                request: $crate::bindings::exports::wasm_mcp::plugin::completions::CompletionRequest,
            ) -> ::std::result::Result<
                $crate::bindings::exports::wasm_mcp::plugin::completions::Completion,
                $crate::bindings::wasm_mcp::plugin::types::Error,
            > {
                $crate::__private::complete(&$build(), request)
            }
        }

        $crate::bindings::__export_plugin_world!(__WasmMcpPlugin with_types_in $crate::bindings);
    };
}
