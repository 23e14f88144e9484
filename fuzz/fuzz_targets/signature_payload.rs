//! A signature payload, whatever a registry serves: what it vouches for
//! (a digest and a repository without tag or digest), or nothing; never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((_, repository)) = wasm_mcp::oci::signature::signed_identity(data) {
        assert!(!repository.contains('@'), "{repository}");
    }
});
