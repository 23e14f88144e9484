//! The counters as Prometheus reads them, and the bounds on their series.

use super::*;

#[test]
fn calls_are_counted_by_outcome_and_the_tool_series_are_capped() {
    let m = Metrics::new();
    m.tool_call("p", "t", Outcome::Ok, Duration::from_millis(2));
    m.tool_call("p", "t", Outcome::Ok, Duration::from_millis(3));
    m.tool_call("p", "t", Outcome::Trap, Duration::from_millis(4));
    for i in 0..MAX_TOOL_SERIES + 5 {
        m.tool_call("q", &format!("tool{i}"), Outcome::Ok, Duration::ZERO);
    }
    m.refused(Refusal::Sessions);
    m.dropped(Dropped::SlowClient, 3);
    let text = m.render(&Snapshot {
        instances: 2,
        spare_instances: 1,
        tasks: vec![("working".into(), 4)],
        ..Snapshot::default()
    });
    for line in [
        r#"wasm_mcp_tool_calls_total{plugin="p",tool="t",outcome="ok"} 2"#,
        r#"wasm_mcp_tool_calls_total{plugin="p",tool="t",outcome="trap"} 1"#,
        r#"wasm_mcp_tool_calls_total{plugin="p",tool="t",outcome="timeout"} 0"#,
        r#"wasm_mcp_tool_call_duration_seconds_count{plugin="p",tool="t"} 3"#,
        r#"wasm_mcp_tool_calls_total{plugin="_other",tool="_other",outcome="ok"} 6"#,
        r#"wasm_mcp_requests_refused_total{reason="sessions"} 1"#,
        r#"wasm_mcp_notifications_dropped_total{reason="slow_client"} 3"#,
        "wasm_mcp_instances 2",
        "wasm_mcp_spare_instances 1",
        r#"wasm_mcp_tasks{status="working"} 4"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    let series = text
        .lines()
        .filter(|l| l.starts_with("wasm_mcp_tool_call_duration_seconds_count"))
        .count();
    assert_eq!(series, MAX_TOOL_SERIES + 1);
}

#[test]
fn label_values_are_cut_short_whatever_the_names() {
    let m = Metrics::new();
    let long = "é".repeat(10_000);
    for i in 0..50 {
        m.tool_call(&long, &format!("{long}{i}"), Outcome::Ok, Duration::ZERO);
    }
    m.plugin_load(&long, true);
    let text = m.render(&Snapshot::default());
    let longest = text.lines().map(str::len).max().unwrap();
    assert!(longest < 2 * MAX_LABEL_BYTES + 200, "{longest}");
    assert!(text.contains("…"));
    assert_eq!(label("short"), "short");
    assert!(label(&long).len() <= MAX_LABEL_BYTES);
}
