//! Taking values a plugin hands the host (results, lists, questions) out of
//! its linear memory under a budget.
//!
//! Generated bindings copy a whole value into host memory before the host
//! sees it, and its host form can be many times its size in the guest (a
//! list of a million empty items is a few MB in the guest and a GB on the
//! host). Here every string, byte list and list is lifted by a type of
//! this module that first charges its length (bytes, items) to the call's
//! [`Budget`] and copies nothing once the budget is spent: the lift fails
//! with [`OverBudget`] instead.
//!
//! A lift runs synchronously inside a poll of the call's future, so the
//! budget lives in a thread-local that [`Budgeted`] installs around each
//! poll and takes back after it; other calls polled on the same thread
//! never see it.

mod bounded;
mod contract;
mod guest_str;

pub(super) use bounded::{BoundedBytes, BoundedList, BoundedStr};
pub(super) use contract::*;
pub(super) use guest_str::GuestStr;

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Bytes charged for each list item on top of its contents: its host form
/// costs memory even when empty.
const ITEM_OVERHEAD: usize = 32;

/// What may still be copied out of the guest during one call.
#[derive(Debug, Clone)]
pub(super) struct Budget {
    bytes: usize,
    items: usize,
    max_bytes: usize,
    max_items: usize,
}

/// A value over its [`Budget`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct OverBudget(pub String);

impl Budget {
    /// A budget of `bytes` and `items`.
    pub(super) fn new(bytes: usize, items: usize) -> Self {
        Budget {
            bytes,
            items,
            max_bytes: bytes,
            max_items: items,
        }
    }

    fn charge_bytes(&mut self, n: usize) -> Result<(), OverBudget> {
        self.bytes = self.bytes.checked_sub(n).ok_or_else(|| {
            OverBudget(format!(
                "what the plugin handed the host is over this plugin's limit of {} bytes",
                self.max_bytes
            ))
        })?;
        Ok(())
    }

    fn charge_items(&mut self, n: usize) -> Result<(), OverBudget> {
        self.items = self.items.checked_sub(n).ok_or_else(|| {
            OverBudget(format!(
                "what the plugin handed the host is over this plugin's limit of {} items",
                self.max_items
            ))
        })?;
        self.charge_bytes(n.saturating_mul(ITEM_OVERHEAD))
    }
}

thread_local! {
    /// The budget of the call being polled on this thread, if any.
    static CURRENT: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Charges the budget of the call being polled. Without one, nothing may
/// be lifted (a lift outside [`Budgeted`] is a bug, and fails closed).
fn charge(f: impl FnOnce(&mut Budget) -> Result<(), OverBudget>) -> wasmtime::Result<()> {
    CURRENT.with(|current| match current.borrow_mut().as_mut() {
        Some(budget) => f(budget).map_err(wasmtime::Error::new),
        None => Err(wasmtime::Error::new(OverBudget(
            "a plugin value was read outside a call's budget".into(),
        ))),
    })
}

/// A call's future with its budget installed while it is polled.
pub(super) struct Budgeted<F> {
    budget: Option<Budget>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Budgeted<F> {
    /// `inner`, lifting under `budget`.
    pub(super) fn new(budget: Budget, inner: F) -> Self {
        Budgeted {
            budget: Some(budget),
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for Budgeted<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let outer = CURRENT.with(|c| c.replace(this.budget.take()));
        let poll = this.inner.as_mut().poll(cx);
        this.budget = CURRENT.with(|c| c.replace(outer));
        poll
    }
}

/// A view lifted under the budget, made into the bindings' host type by
/// moving its parts (no further copies).
pub(super) trait IntoOwned {
    /// The host type.
    type Owned;
    /// Moves the value into its host type.
    fn into_owned(self) -> Self::Owned;
}

impl<T: IntoOwned> IntoOwned for Option<T> {
    type Owned = Option<T::Owned>;
    fn into_owned(self) -> Self::Owned {
        self.map(IntoOwned::into_owned)
    }
}

impl<T: IntoOwned, E: IntoOwned> IntoOwned for Result<T, E> {
    type Owned = Result<T::Owned, E::Owned>;
    fn into_owned(self) -> Self::Owned {
        self.map(IntoOwned::into_owned)
            .map_err(IntoOwned::into_owned)
    }
}

impl<A: IntoOwned, B: IntoOwned> IntoOwned for (A, B) {
    type Owned = (A::Owned, B::Owned);
    fn into_owned(self) -> Self::Owned {
        (self.0.into_owned(), self.1.into_owned())
    }
}

/// Plain values: as they are.
macro_rules! plain {
    ($($t:ty),* $(,)?) => {$(
        impl IntoOwned for $t {
            type Owned = $t;
            fn into_owned(self) -> $t {
                self
            }
        }
    )*};
}

pub(crate) use plain;

plain!(bool, u32, u64, f64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_budget_and_fail_closed_without_one() {
        assert!(charge(|b| b.charge_bytes(1)).is_err());
        let mut budget = Budget::new(100, 2);
        assert!(budget.charge_items(2).is_ok());
        assert_eq!(budget.bytes, 100 - 2 * ITEM_OVERHEAD);
        assert!(budget.charge_items(1).is_err());
        assert!(budget.charge_bytes(36).is_ok());
        assert!(budget.charge_bytes(1).is_err());
    }

    #[test]
    fn a_budget_is_seen_only_inside_its_own_polls() {
        let run = |budget: Budget| {
            let future = Budgeted::new(budget, async { charge(|b| b.charge_bytes(10)) });
            futures_util::FutureExt::now_or_never(future).unwrap()
        };
        assert!(run(Budget::new(10, 0)).is_ok());
        assert!(run(Budget::new(9, 0)).is_err());
        // Nothing stays installed after the poll.
        assert!(charge(|b| b.charge_bytes(0)).is_err());
    }
}
