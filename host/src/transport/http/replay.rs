//! Replaying a session stream's events from the shared store: what a
//! client that lost its replica missed, read on another one.

use super::event_log::{EventLog, Keeper};
use axum::response::sse::Event;
use futures_util::Stream;
use std::convert::Infallible;

/// Events read from the store per query.
const PAGE: usize = 100;

/// The kept events of stream `stream` after event `after`, up to (not
/// including) event `until` when given, in order. A store that fails ends
/// the replay (logged): the client resumes again later.
pub(super) fn kept(
    keeper: Keeper,
    stream: u64,
    after: u64,
    until: Option<u64>,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let pages = futures_util::stream::unfold(Some(after), move |cursor| {
        let keeper = keeper.clone();
        async move {
            let cursor = cursor?;
            let page = match keeper
                .store
                .after(&keeper.session, stream, cursor, PAGE)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!("replaying a stream's kept events failed: {error:#}");
                    return None;
                }
            };
            let full = page.len() == PAGE;
            let events: Vec<(u64, String)> = page
                .into_iter()
                .take_while(|(seq, _)| until.is_none_or(|u| *seq < u))
                .collect();
            let next = match events.last() {
                Some((seq, _)) if full && until.is_none_or(|u| seq + 1 < u) => Some(*seq),
                _ => None,
            };
            if events.is_empty() {
                return None;
            }
            Some((events, next))
        }
    });
    futures_util::StreamExt::flat_map(pages, move |events| {
        futures_util::stream::iter(events.into_iter().map(move |(seq, text)| {
            Ok(Event::default()
                .id(EventLog::event_id_of(stream, seq))
                .data(text))
        }))
    })
}
