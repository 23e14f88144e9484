//! When a changed file is complete enough to load.
//!
//! A file is written in steps (create, several writes, close; or a write to
//! a temporary file and a rename). Each event for a path pushes its reload
//! back: by a short pause after an event that usually ends a write (the
//! writer closed the file, renamed it into place, or removed it), by a long
//! one after any other (more writes are likely to follow). A path is due
//! once no event has arrived for it within its pause, so a burst of writes
//! yields one reload.

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The pause after an event that usually completes a file.
pub(super) const AFTER_COMPLETION: Duration = Duration::from_millis(10);
/// The pause after any other event.
pub(super) const AFTER_WRITE: Duration = Duration::from_millis(150);

/// Paths waiting for their writes to settle.
#[derive(Default)]
pub(super) struct Settle {
    due: HashMap<PathBuf, Instant>,
}

impl Settle {
    /// Records an event of `kind` for `path` at `now`.
    pub(super) fn note(&mut self, path: &Path, kind: &EventKind, now: Instant) {
        let Some(pause) = pause_after(kind) else {
            return;
        };
        self.due.insert(path.to_owned(), now + pause);
    }

    /// When the next path becomes due, if any is waiting.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    /// Removes and returns the paths due at `now`, sorted.
    pub(super) fn take_due(&mut self, now: Instant) -> Vec<PathBuf> {
        let mut ready: Vec<PathBuf> = self
            .due
            .iter()
            .filter(|(_, &at)| at <= now)
            .map(|(path, _)| path.clone())
            .collect();
        for path in &ready {
            self.due.remove(path);
        }
        ready.sort();
        ready
    }
}

/// How long to wait after an event of `kind`; `None` for events that do not
/// change the file (reads, opens, metadata-only changes).
fn pause_after(kind: &EventKind) -> Option<Duration> {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write))
        | EventKind::Modify(ModifyKind::Name(_))
        | EventKind::Remove(_) => Some(AFTER_COMPLETION),
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => None,
        _ => Some(AFTER_WRITE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange};

    fn write() -> EventKind {
        EventKind::Modify(ModifyKind::Data(DataChange::Any))
    }

    fn close() -> EventKind {
        EventKind::Access(AccessKind::Close(AccessMode::Write))
    }

    #[test]
    fn a_burst_of_writes_is_due_once_after_the_close() {
        let mut settle = Settle::default();
        let p = Path::new("/p/a.wasm");
        let t0 = Instant::now();
        settle.note(p, &EventKind::Create(CreateKind::File), t0);
        for i in 1..5 {
            settle.note(p, &write(), t0 + Duration::from_millis(i * 20));
        }
        // Still writing: not due within the long pause.
        assert!(settle
            .take_due(t0 + Duration::from_millis(80 + 100))
            .is_empty());
        let closed = t0 + Duration::from_millis(200);
        settle.note(p, &close(), closed);
        assert_eq!(settle.next_due(), Some(closed + AFTER_COMPLETION));
        assert!(settle.take_due(closed).is_empty());
        assert_eq!(settle.take_due(closed + AFTER_COMPLETION), vec![p]);
        assert!(settle.next_due().is_none());
    }

    #[test]
    fn a_write_after_a_close_waits_again() {
        let mut settle = Settle::default();
        let p = Path::new("/p/a.wasm");
        let t0 = Instant::now();
        settle.note(p, &close(), t0);
        settle.note(p, &write(), t0 + Duration::from_millis(5));
        assert!(settle.take_due(t0 + Duration::from_millis(20)).is_empty());
        assert_eq!(
            settle.next_due(),
            Some(t0 + Duration::from_millis(5) + AFTER_WRITE)
        );
    }

    #[test]
    fn reads_do_not_schedule_anything() {
        let mut settle = Settle::default();
        settle.note(
            Path::new("/p/a.wasm"),
            &EventKind::Access(AccessKind::Open(AccessMode::Read)),
            Instant::now(),
        );
        assert!(settle.next_due().is_none());
    }
}
