//! The notes between replicas against the golden payloads in
//! `host/tests/golden/`: what this version writes is exactly them, and
//! every one of them (this version's and the previous version's) reads
//! back as it says. The next version keeps these files and proves it
//! still reads them.

use super::*;
use crate::server::tasks::{Rerun, StoredRerun, RERUN_VERSION};
use serde_json::json;

macro_rules! golden {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/", $name))
    };
}

fn same_json(written: &str, golden: &str) {
    let (a, b): (Value, Value) = (
        serde_json::from_str(written).unwrap(),
        serde_json::from_str(golden).unwrap(),
    );
    assert_eq!(a, b, "written: {written}");
}

fn read(text: &str, me: &str) -> Meaning {
    Note::parse(text).expect("a note").meaning(me)
}

fn cancelled() -> ServerEvent {
    ServerEvent::task_now(
        "r1.abc",
        Status::Cancelled,
        Some("The task was cancelled by request.".into()),
    )
}

/// Each event kind as this version writes it, and reads it back.
#[test]
fn events_of_version_2_are_written_and_read_as_the_golden_files() {
    let cases = [
        (
            golden!("bus-list-v2.json"),
            ServerEvent::ListChanged(ListKind::Tools),
        ),
        (
            golden!("bus-resource-v2.json"),
            ServerEvent::ResourceUpdated("file:///notes.txt".into()),
        ),
        (
            golden!("bus-plugin-v2.json"),
            ServerEvent::PluginReplaced("files".into()),
        ),
        (golden!("bus-task-v2.json"), cancelled()),
        (
            golden!("bus-session_ended-v2.json"),
            ServerEvent::SessionEnded("s-1".into()),
        ),
        (
            golden!("bus-session_changed-v2.json"),
            ServerEvent::SessionChanged("s-1".into()),
        ),
    ];
    for (file, event) in cases {
        let note = Note::event("r1", &event).expect("sent to the other replicas");
        same_json(&note.text(), file);
        assert_eq!(read(file, "r2"), Meaning::Event(event));
        // No echo: the sender does not hear its own.
        assert_eq!(read(file, "r1"), Meaning::Nothing);
    }
    // What stays in its process is not sent.
    assert!(Note::event("r1", &ServerEvent::Shutdown).is_none());
}

/// The version 2 notes addressed to one replica, and `hello`.
#[test]
fn addressed_notes_of_version_2_are_written_and_read_as_the_golden_files() {
    same_json(&Note::hello("r1").text(), golden!("bus-hello-v2.json"));
    assert_eq!(
        read(golden!("bus-hello-v2.json"), "r2"),
        Meaning::Hello("r1".into())
    );
    let answers = Note::answers("r2", 17, Some(("r1", 5)));
    same_json(&answers.text(), golden!("bus-answers-v2.json"));
    assert_eq!(
        read(golden!("bus-answers-v2.json"), "r2"),
        Meaning::Answers {
            row: 17,
            relay: Some(("r1".into(), 5))
        }
    );
    assert_eq!(read(golden!("bus-answers-v2.json"), "r3"), Meaning::Nothing);
    same_json(
        &Note::cancel("r1", "r2", "r2.abc", 6).text(),
        golden!("bus-cancel-v2.json"),
    );
    assert_eq!(
        read(golden!("bus-cancel-v2.json"), "r2"),
        Meaning::Cancel {
            task: "r2.abc".into(),
            from: "r1".into(),
            id: 6
        }
    );
    same_json(
        &Note::reply("r2", "r1", 6, &Ok(true)).text(),
        golden!("bus-reply-v2.json"),
    );
    assert_eq!(
        read(golden!("bus-reply-v2.json"), "r1"),
        Meaning::Reply {
            id: 6,
            decision: Ok(true)
        }
    );
    let error = json!({ "code": -32602, "message": "inputResponses.q: action must be accept, decline or cancel" });
    same_json(
        &Note::reply("r2", "r1", 7, &Err(error.clone())).text(),
        golden!("bus-refusal-v2.json"),
    );
    assert_eq!(
        read(golden!("bus-refusal-v2.json"), "r1"),
        Meaning::Reply {
            id: 7,
            decision: Err(error)
        }
    );
    same_json(&Note::spilled(42).text(), golden!("bus-spilled-v2.json"));
    assert_eq!(
        read(golden!("bus-spilled-v2.json"), "r2"),
        Meaning::Spilled(42)
    );
}

/// What the previous version (317a478) sends reads as it meant.
#[test]
fn the_previous_versions_notes_read_as_version_1() {
    let task = Note::parse(golden!("bus-task-317a478.json")).unwrap();
    assert_eq!(task.v, 1);
    assert_eq!(
        task.meaning("r2"),
        Meaning::Event(ServerEvent::task_changed("r1.abc"))
    );
    assert_eq!(
        read(golden!("bus-answers-317a478.json"), "r2"),
        Meaning::Answers {
            row: 17,
            relay: None
        }
    );
    assert_eq!(
        read(golden!("bus-spilled-317a478.json"), "r2"),
        Meaning::Spilled(42)
    );
    // The answers of a version before the answers rows.
    let old = json!({ "from": "r1", "event": { "answered": "r2.t", "responses": { "q": 1 } } });
    assert!(matches!(
        read(&old.to_string(), "r2"),
        Meaning::OldAnswers { task, .. } if task == "r2.t"
    ));
}

/// What this version sends, the previous version's decoder reads: its
/// keys are where it looks for them (a copy of 317a478's `decode`).
#[test]
fn the_previous_version_reads_what_this_one_sends() {
    fn decode_317a478(value: &Value) -> Option<String> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        for key in ["list", "resource", "plugin", "task", "session_ended"] {
            if let Some(found) = text(key) {
                return Some(format!("{key}={found}"));
            }
        }
        None
    }
    let sent: Value = serde_json::from_str(golden!("bus-task-v2.json")).unwrap();
    assert_eq!(sent["from"], "r1");
    assert_eq!(
        decode_317a478(&sent["event"]).as_deref(),
        Some("task=r1.abc")
    );
    let answers: Value = serde_json::from_str(golden!("bus-answers-v2.json")).unwrap();
    assert_eq!(
        (answers["to"].as_str(), answers["answers"].as_i64()),
        (Some("r2"), Some(17))
    );
    // A hello has no `event` and no `to`: the previous version passes it by.
    let hello: Value = serde_json::from_str(golden!("bus-hello-v2.json")).unwrap();
    assert!(hello.get("event").is_none() && hello.get("to").is_none());
}

/// A note of a newer version, with fields this version does not know, is
/// ignored by the rule (not an error, not a panic); unknown fields of a
/// known version are ignored, and an unknown status is "not said".
#[test]
fn a_newer_or_unknown_note_is_ignored_by_the_rule() {
    assert_eq!(read(golden!("bus-v99.json"), "r2"), Meaning::Newer(99));
    let mut v2: Value = serde_json::from_str(golden!("bus-v99.json")).unwrap();
    v2["v"] = json!(2);
    assert_eq!(
        read(&v2.to_string(), "r2"),
        Meaning::Event(ServerEvent::task_changed("r9.abc"))
    );
    let unknown_kind = json!({ "v": 2, "from": "r9", "event": { "hologram": "x" } });
    assert_eq!(read(&unknown_kind.to_string(), "r2"), Meaning::Nothing);
    assert!(Note::parse("not json").is_err());
    assert!(Note::parse(r#"{"v": "two"}"#).is_err());
}

/// The rerun call as this version writes it, and as the previous version
/// wrote it (no `v`: version 1), read back; a newer one is refused.
#[test]
fn rerun_calls_read_back_by_their_version() {
    let written = Rerun {
        v: RERUN_VERSION,
        tool: "fetch".into(),
        plugin: Some("web".into()),
        plugin_tool: Some("fetch".into()),
        component: Some("0123abcd".into()),
        grants: Some(json!({ "scopes": ["read"] })),
        arguments: json!({ "url": "https://example.com" }),
        principal: Some("ada".into()),
        roots: Some(vec!["/srv/data".into()]),
    };
    let text = StoredRerun::Call(written.clone()).text().unwrap();
    same_json(&text, golden!("rerun-v1.json"));
    assert_eq!(
        StoredRerun::read(golden!("rerun-v1.json")),
        StoredRerun::Call(written.clone())
    );
    let old = Rerun {
        v: 1,
        grants: None,
        principal: None,
        roots: None,
        ..written
    };
    assert_eq!(
        StoredRerun::read(golden!("rerun-317a478.json")),
        StoredRerun::Call(old)
    );
    let StoredRerun::Refused(why) = StoredRerun::read(golden!("rerun-v99.json")) else {
        panic!("a newer rerun call is refused");
    };
    assert!(why.contains("version 99"), "{why}");
    assert!(matches!(
        StoredRerun::read("{\"v\":1}"),
        StoredRerun::Refused(_)
    ));
}

/// A task status this version does not know reads as working.
#[test]
fn an_unknown_task_status_reads_as_working() {
    for status in [
        Status::Working,
        Status::InputRequired,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ] {
        assert_eq!(Status::parse(status.as_str()), status);
        assert_eq!(Status::known(status.as_str()), Some(status));
    }
    assert_eq!(Status::known("paused"), None);
    assert_eq!(Status::parse("paused"), Status::Working);
}
