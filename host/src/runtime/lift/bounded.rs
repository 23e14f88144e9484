//! Strings, byte lists and lists that charge the call's budget before they
//! are copied out of guest memory.
//!
//! Each has the canonical ABI form of its plain counterpart (`String`,
//! `Vec<u8>`, `Vec<T>`): a pointer and a length. The length is read first
//! and charged; only then is the lift delegated to the plain type, which
//! checks the bounds and copies. These implement wasmtime's hidden lifting
//! methods (what its derive macros implement); a wasmtime upgrade may need
//! this file touched.

// wasmtime's `ComponentType`/`Lift` derives and impls need these types
// public (they appear in public associated types), though the module is
// private.
#![allow(unreachable_pub)]

use super::{charge, IntoOwned};
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift};

/// The bit that marks a UTF-16 string under the latin1+utf16 encoding.
const UTF16_TAG: u32 = 1 << 31;

/// The length half of a flat pointer pair.
fn flat_len(src: &[wasmtime::ValRaw; 2]) -> u32 {
    src[1].get_u32()
}

/// The length half of a pointer pair in memory.
fn memory_len(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[4..8].try_into().expect("a pointer pair is 8 bytes"))
}

/// Defines a bounded type `$name` lifted like `$plain` after `$charge`
/// accepted the length.
macro_rules! bounded {
    ($(#[$doc:meta])* $name:ident $(<$t:ident>)? = $plain:ty, $charge:expr) => {
        $(#[$doc])*
        pub struct $name $(<$t>)? (pub $plain);

        // SAFETY: the representation and type check of `$plain`, to which
        // lifting is delegated.
        unsafe impl $(<$t: ComponentType>)? ComponentType for $name $(<$t>)? {
            type Lower = <$plain as ComponentType>::Lower;
            const ABI: CanonicalAbiInfo = <$plain as ComponentType>::ABI;

            fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
                <$plain as ComponentType>::typecheck(ty, types)
            }
        }

        // SAFETY: delegates to `$plain` after charging its length.
        unsafe impl $(<$t: Lift>)? Lift for $name $(<$t>)? {
            fn linear_lift_from_flat(
                cx: &mut LiftContext<'_>,
                ty: InterfaceType,
                src: &Self::Lower,
            ) -> wasmtime::Result<Self> {
                charge(|b| $charge(b, flat_len(src)))?;
                <$plain as Lift>::linear_lift_from_flat(cx, ty, src).map($name)
            }

            fn linear_lift_from_memory(
                cx: &mut LiftContext<'_>,
                ty: InterfaceType,
                bytes: &[u8],
            ) -> wasmtime::Result<Self> {
                charge(|b| $charge(b, memory_len(bytes)))?;
                <$plain as Lift>::linear_lift_from_memory(cx, ty, bytes).map($name)
            }
        }
    };
}

bounded!(
    /// A string, charged by its length in code units (UTF-16 may grow by
    /// half when decoded).
    BoundedStr = String,
    |b: &mut super::Budget, len: u32| b.charge_bytes((len & !UTF16_TAG) as usize)
);

bounded!(
    /// A `list<u8>`, charged by its length.
    BoundedBytes = Vec<u8>,
    |b: &mut super::Budget, len: u32| b.charge_bytes(len as usize)
);

bounded!(
    /// A list, charged by its item count; its items charge their own contents.
    BoundedList<T> = Vec<T>,
    |b: &mut super::Budget, len: u32| b.charge_items(len as usize)
);

impl IntoOwned for BoundedStr {
    type Owned = String;
    fn into_owned(self) -> String {
        self.0
    }
}

impl IntoOwned for BoundedBytes {
    type Owned = Vec<u8>;
    fn into_owned(self) -> Vec<u8> {
        self.0
    }
}

impl<T: IntoOwned> IntoOwned for BoundedList<T> {
    type Owned = Vec<T::Owned>;
    fn into_owned(self) -> Self::Owned {
        self.0.into_iter().map(IntoOwned::into_owned).collect()
    }
}
