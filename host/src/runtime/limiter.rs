//! One cap over all of an instance's memory: every linear memory and every
//! table together (a component may have several of each; a per-memory cap
//! would let it take several times its share).

use std::sync::atomic::{AtomicUsize, Ordering};
use wasmtime::ResourceLimiter;

/// What every live instance holds, together.
static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Bytes of linear memory and tables the live instances hold, together.
pub(super) fn memory_in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

/// Bytes counted per table element (a function reference).
const TABLE_ELEMENT_BYTES: usize = 8;

/// Counts what a store's memories and tables take, and refuses growth past
/// the cap with a trap that says so.
pub(super) struct MemoryCap {
    limit: usize,
    used: usize,
}

impl MemoryCap {
    /// A cap of `limit` bytes.
    pub(super) fn new(limit: usize) -> Self {
        MemoryCap { limit, used: 0 }
    }

    fn grow(&mut self, by: usize) -> wasmtime::Result<bool> {
        match self.used.checked_add(by) {
            Some(total) if total <= self.limit => {
                self.used = total;
                IN_USE.fetch_add(by, Ordering::Relaxed);
                Ok(true)
            }
            _ => Err(wasmtime::format_err!(
                "the plugin reached its memory limit of {} MiB (memories and tables together)",
                self.limit >> 20
            )),
        }
    }
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(desired.saturating_sub(current))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(
            desired
                .saturating_sub(current)
                .saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }
}

impl Drop for MemoryCap {
    fn drop(&mut self) {
        IN_USE.fetch_sub(self.used, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_and_tables_share_one_cap() {
        let mut cap = MemoryCap::new(100);
        assert!(cap.memory_growing(0, 60, None).unwrap());
        // A second memory of the same size would fit a per-memory cap.
        assert!(cap.memory_growing(0, 60, None).is_err());
        assert!(cap.table_growing(0, 5, None).unwrap()); // 40 bytes
        assert!(cap.table_growing(5, 6, None).is_err());
    }
}
