//! Writes a test fixture: a plugin component whose core module has two
//! linear memories, to check that one memory cap covers both.
//!
//!     cargo run --release --example two_memories -- OUT.wasm
//!
//! Its tools: `one` grows the first memory by 40 MiB; `both` grows each of
//! the two by 40 MiB. Under a 64 MiB cap, `one` succeeds and `both` must
//! fail, though each memory alone stays under the cap.

use anyhow::Context as _;

/// The core module, hand-written against the canonical ABI of
/// `wasm-mcp:plugin/tools-plugin`.
const CORE: &str = r#"
(module
  (memory $m0 (export "memory") 1)
  (memory $m1 1)
  (global $bump (mut i32) (i32.const 4096))

  ;; list-tools returns a pointer to (ptr, len) of two `tool` records
  ;; (100 bytes each): only name and input-schema are set.
  (data (memory $m0) (i32.const 16) "\00\02\00\00\02\00\00\00")
  (data (memory $m0) (i32.const 200) "one")
  (data (memory $m0) (i32.const 210) "both")
  (data (memory $m0) (i32.const 220) "{\"type\":\"object\"}")
  (data (memory $m0) (i32.const 512) "\c8\00\00\00\03\00\00\00")
  (data (memory $m0) (i32.const 544) "\dc\00\00\00\11\00\00\00")
  (data (memory $m0) (i32.const 612) "\d2\00\00\00\04\00\00\00")
  (data (memory $m0) (i32.const 644) "\dc\00\00\00\11\00\00\00")

  (func (export "wasm-mcp:plugin/tools@0.1.0#list-tools") (result i32)
    i32.const 16)

  ;; call-tool(name, arguments): grows memory 0, and memory 1 too for
  ;; `both` (a 4-byte name); answers ok with an empty result (zeroes at 1024).
  (func (export "wasm-mcp:plugin/tools@0.1.0#call-tool")
        (param $name i32) (param $name_len i32) (param i32) (param i32) (result i32)
    (if (i32.eq (memory.grow $m0 (i32.const 640)) (i32.const -1)) (then unreachable))
    (if (i32.eq (local.get $name_len) (i32.const 4))
      (then (if (i32.eq (memory.grow $m1 (i32.const 640)) (i32.const -1)) (then unreachable))))
    i32.const 1024)

  ;; A bump allocator for the host's arguments.
  (func (export "cabi_realloc") (param i32 i32) (param $align i32) (param $size i32) (result i32)
    (local $p i32)
    (local.set $p
      (i32.and
        (i32.add (global.get $bump) (i32.sub (local.get $align) (i32.const 1)))
        (i32.xor (i32.sub (local.get $align) (i32.const 1)) (i32.const -1))))
    (global.set $bump (i32.add (local.get $p) (local.get $size)))
    (local.get $p))
)
"#;

fn main() -> anyhow::Result<()> {
    let out = std::env::args_os()
        .nth(1)
        .context("usage: two_memories OUT.wasm")?;
    let wit = concat!(env!("CARGO_MANIFEST_DIR"), "/../wit");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(wit)?;
    let world = resolve.select_world(&[package], Some("tools-plugin"))?;
    let mut core = wat::parse_str(CORE)?;
    wit_component::embed_component_metadata(
        &mut core,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )?;
    let component = wit_component::ComponentEncoder::default()
        .module(&core)?
        .validate(true)
        .encode()?;
    std::fs::write(&out, component)?;
    Ok(())
}
