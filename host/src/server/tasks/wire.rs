//! Tasks as JSON, on each wire.

use super::store::{Record, Status, Wire};
use serde_json::{json, Map, Value};

/// A time in ms since the Unix epoch as an RFC 3339 UTC timestamp.
pub fn timestamp(ms: u64) -> String {
    let (secs, millis) = (ms / 1000, ms % 1000);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The task's common fields on `wire` (`Task`).
pub fn task(record: &Record, wire: Wire, poll_interval_ms: u64) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.id));
    task.insert("status".into(), json!(record.status.as_str()));
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert("createdAt".into(), json!(timestamp(record.created_ms)));
    task.insert("lastUpdatedAt".into(), json!(timestamp(record.updated_ms)));
    let (ttl, poll) = match wire {
        Wire::Handshake => ("ttl", "pollInterval"),
        Wire::Stateless => ("ttlMs", "pollIntervalMs"),
    };
    task.insert(ttl.into(), json!(record.ttl_ms));
    if !record.status.is_terminal() {
        task.insert(poll.into(), json!(poll_interval_ms));
    }
    task
}

/// The 2026-07-28 `DetailedTask`: the task with its result, error or
/// outstanding input requests inlined.
pub fn detailed(
    record: &Record,
    poll_interval_ms: u64,
    input_requests: Option<Map<String, Value>>,
) -> Map<String, Value> {
    let mut task = task(record, Wire::Stateless, poll_interval_ms);
    match (record.status, &record.outcome) {
        (Status::Completed, Some(Ok(result))) => {
            // The result as a 2026-07-28 request gets it.
            let mut result = result.clone();
            if let Some(obj) = result.as_object_mut() {
                crate::protocol::ResultType::Complete.tag_unless_set(obj);
            }
            task.insert("result".into(), result);
        }
        (Status::Failed, outcome) => {
            let error = match outcome {
                Some(Err(error)) => error.clone(),
                _ => json!({
                    "code": -32603,
                    "message": record.status_message.as_deref().unwrap_or("the task failed"),
                }),
            };
            task.insert("error".into(), error);
        }
        (Status::InputRequired, _) => {
            task.insert(
                "inputRequests".into(),
                Value::Object(input_requests.unwrap_or_default()),
            );
        }
        _ => {}
    }
    task
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(timestamp(1_795_343_445_006), "2026-11-22T10:30:45.006Z");
    }
}
