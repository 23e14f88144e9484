//! Serving MCP: one [`Server`] shared by every connection, and one
//! [`Connection`] per client that dispatches its messages concurrently.
//! Knows nothing of how bytes arrive.

pub mod access;
mod admission;
pub mod audit;
pub mod bus;
mod call;
mod clock;
mod connection;
pub mod convert;
mod dispatch;
mod event;
mod events;
mod methods;
mod notices;
mod options;
mod outbox;
mod prepared;
pub mod rates;
pub mod refusals;
mod request;
mod rerun;
mod roots;
pub mod search;
mod session;
pub mod session_store;
mod shared;
pub mod store_error;
mod task_status;
pub mod tasks;
#[cfg(test)]
pub(crate) mod tests;

pub use access::{Caller, Policy};
pub use admission::{AdmissionLimits, RETRY_AFTER_MS};
#[cfg(test)]
pub(crate) use bus::contract::check as bus_contract;
pub use bus::{Bus, Heard, LocalBus, Subscription};
pub use call::Outcome;
pub use connection::{Canceller, Connection, Reread};
pub use dispatch::{handle, handle_text, handle_text_from, serve_stateless, Arrival};
pub use event::ServerEvent;
pub use notices::Notices;
/// Notice keys.
pub use notices::{build_key as build_notice_key, load_key as load_notice_key};
pub use options::ServerOptions;
pub use outbox::{Outbox, OutboxReceiver, Outgoing};
pub use session::{Arriving, Settled};
#[cfg(test)]
pub(crate) use session_store::contract::check as session_store_contract;
pub use session_store::{MemorySessions, SessionRecord, SessionStore, StreamEvents};
pub use shared::{Backends, Loading, Server};
pub use store_error::StoreError;
