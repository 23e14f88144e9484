//! A test fixture that imports an interface no wasm-mcp host provides
//! (`fixture:alien/thing`), so loading it must fail with that import named.

wit_bindgen::generate!({
    inline: r#"
        package fixture:alien;

        interface thing {
            poke: func() -> u32;
        }

        world alien {
            import thing;
            export wasm-mcp:plugin/tools@0.1.0;
        }
    "#,
    path: "../../wit",
    generate_all,
});

use exports::wasm_mcp::plugin::tools::{CallResult, Guest, Tool};
use wasm_mcp::plugin::types::Error;

struct Alien;

impl Guest for Alien {
    fn list_tools() -> Vec<Tool> {
        Vec::new()
    }

    fn call_tool(_name: String, _arguments: String) -> Result<CallResult, Error> {
        Err(Error::Internal(format!(
            "poked: {}",
            fixture::alien::thing::poke()
        )))
    }
}

export!(Alien);
