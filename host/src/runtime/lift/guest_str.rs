//! A guest string whose length is known before it is read.

use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift, WasmStr};
use wasmtime::StoreContext;

/// A string in guest memory, like [`WasmStr`], that also tells its length
/// (in code units) without reading it, so the host can refuse a string
/// before copying or even validating it.
///
/// `WasmStr` keeps its length to itself, so this lifts the same canonical
/// ABI pair (pointer, length) and keeps the length beside it. It leans on
/// wasmtime's hidden `__internal` items (what its derive macros use); a
/// wasmtime upgrade may need this file touched.
pub(crate) struct GuestStr {
    text: WasmStr,
    len: usize,
}

/// The bit that marks a UTF-16 string under the latin1+utf16 encoding.
const UTF16_TAG: u32 = 1 << 31;

impl GuestStr {
    /// The string's length in code units (bytes for UTF-8 and latin1).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The string, validated (and decoded when not UTF-8).
    pub(crate) fn to_str<'a, T: 'static>(
        &self,
        store: impl Into<StoreContext<'a, T>>,
    ) -> wasmtime::Result<std::borrow::Cow<'a, str>> {
        self.text.to_str(store)
    }
}

fn code_units(raw: u32) -> usize {
    (raw & !UTF16_TAG) as usize
}

// SAFETY: the same representation and type check as `WasmStr`, to which
// lifting is delegated.
unsafe impl ComponentType for GuestStr {
    type Lower = <WasmStr as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <WasmStr as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <WasmStr as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `WasmStr`, which checks the pointer and length
// against the guest's memory; the length kept is the one it checked.
unsafe impl Lift for GuestStr {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        let len = code_units(src[1].get_u32());
        let text = WasmStr::linear_lift_from_flat(cx, ty, src)?;
        Ok(GuestStr { text, len })
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        let raw = u32::from_le_bytes(bytes[4..8].try_into().expect("a pointer pair is 8 bytes"));
        let text = WasmStr::linear_lift_from_memory(cx, ty, bytes)?;
        Ok(GuestStr {
            text,
            len: code_units(raw),
        })
    }
}
