//! What a registry answers for a manifest: any bytes are an OCI image
//! manifest or index and a checked artifact, or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oci_client::manifest::{OciImageIndex, OciImageManifest};

fuzz_target!(|data: &[u8]| {
    if let Ok(manifest) = serde_json::from_slice::<OciImageManifest>(data) {
        if let Ok(artifact) = wasm_mcp::oci::artifact(&manifest, 256 << 20) {
            assert_eq!(artifact.hex.len(), 64);
            assert!(artifact.layer.size <= 256 << 20);
        }
    }
    let _ = serde_json::from_slice::<OciImageIndex>(data);
});
