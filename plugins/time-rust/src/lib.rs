//! The time tools of the reference server `mcp-server-time`, as a sandboxed
//! component: the current time in an IANA zone, and a wall-clock time
//! converted between two zones. The zone database is compiled in
//! (`chrono-tz`), so the plugin needs no files. Its local zone (named in the
//! tools' descriptions, as the reference names its own) is the variable
//! `LOCAL_TIMEZONE` when the host grants it, else UTC.

use chrono::{DateTime, LocalResult, NaiveTime, Offset, TimeZone, Utc};
use chrono_tz::{OffsetComponents, Tz};
use serde_json::{json, Value};
use wasm_mcp_sdk::prelude::*;

/// The variable naming the zone the tools call local.
const LOCAL_TIMEZONE: &str = "LOCAL_TIMEZONE";

#[derive(Deserialize)]
struct CurrentTime {
    timezone: String,
}

#[derive(Deserialize)]
struct ConvertTime {
    source_timezone: String,
    time: String,
    target_timezone: String,
}

/// A time in a zone, as the reference reports it.
#[derive(Serialize)]
struct TimeResult {
    timezone: String,
    datetime: String,
    day_of_week: String,
    is_dst: bool,
}

#[derive(Serialize)]
struct TimeConversion {
    source: TimeResult,
    target: TimeResult,
    time_difference: String,
}

/// A tool failure, worded as the reference words it.
fn failure(tool: &str, why: impl std::fmt::Display) -> CallResult {
    error_result(format!("Error executing tool {tool}: {why}"))
}

/// Structured content with its JSON (indented by two) as the text.
fn structured(value: &impl Serialize) -> CallResult {
    let compact = serde_json::to_string(value).unwrap_or_default();
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    CallResult {
        content: vec![text(pretty)],
        structured_content: Some(compact),
        is_error: false,
        meta: None,
    }
}

/// An exact IANA key (case matters, as in the reference on Linux).
fn zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .ok()
        .filter(|tz| tz.name() == name)
        .ok_or_else(|| format!("Invalid timezone: 'No time zone found with key {name}'"))
}

fn require(name: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("Missing required argument: {name}"));
    }
    Ok(())
}

fn time_result(name: &str, at: &DateTime<Tz>) -> TimeResult {
    TimeResult {
        timezone: name.to_owned(),
        datetime: at.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        day_of_week: at.format("%A").to_string(),
        is_dst: !at.offset().dst_offset().is_zero(),
    }
}

fn current_time(args: &CurrentTime) -> Result<TimeResult, String> {
    require("timezone", &args.timezone)?;
    let tz = zone(&args.timezone)?;
    Ok(time_result(&args.timezone, &Utc::now().with_timezone(&tz)))
}

/// `HH:MM` on a 24-hour clock; one digit is enough for either, as in
/// Python's `strptime("%H:%M")`.
fn wall_clock(time: &str) -> Option<NaiveTime> {
    let (hours, minutes) = time.split_once(':')?;
    let field = |s: &str, max: u32| {
        (matches!(s.len(), 1 | 2) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
            .filter(|n| *n <= max)
    };
    NaiveTime::from_hms_opt(field(hours, 23)?, field(minutes, 59)?, 0)
}

/// Hours between two offsets: `+1.0h`, or `+5.75h` for a fraction.
fn hours_between(source_secs: i32, target_secs: i32) -> String {
    let hours = f64::from(target_secs - source_secs) / 3600.0;
    if hours.fract() == 0.0 {
        format!("{hours:+.1}h")
    } else {
        let fixed = format!("{hours:+.2}");
        format!("{}h", fixed.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn convert_time(args: &ConvertTime) -> Result<TimeConversion, String> {
    require("source_timezone", &args.source_timezone)?;
    require("target_timezone", &args.target_timezone)?;
    let source_tz = zone(&args.source_timezone)?;
    let target_tz = zone(&args.target_timezone)?;
    let time = wall_clock(&args.time)
        .ok_or("Invalid time format. Expected HH:MM [24-hour format]".to_owned())?;
    let date = Utc::now().with_timezone(&source_tz).date_naive();
    let local = date.and_time(time);
    // An ambiguous time (a clock set back) is its first occurrence, as
    // Python's fold=0; a skipped one (a clock set forward) is refused.
    let source = match source_tz.from_local_datetime(&local) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => at,
        LocalResult::None => {
            return Err(format!(
                "Invalid time: {} does not exist in {} on {date} (skipped by a clock change)",
                args.time, args.source_timezone
            ))
        }
    };
    let target = source.with_timezone(&target_tz);
    Ok(TimeConversion {
        time_difference: hours_between(
            source.offset().fix().local_minus_utc(),
            target.offset().fix().local_minus_utc(),
        ),
        source: time_result(&args.source_timezone, &source),
        target: time_result(&args.target_timezone, &target),
    })
}

/// A string argument's schema, titled as pydantic titles it.
fn string_property(title: &str, description: &str) -> Value {
    json!({ "description": description, "title": title, "type": "string" })
}

fn time_result_schema() -> Value {
    json!({
        "properties": {
            "timezone": { "title": "Timezone", "type": "string" },
            "datetime": { "title": "Datetime", "type": "string" },
            "day_of_week": { "title": "Day Of Week", "type": "string" },
            "is_dst": { "title": "Is Dst", "type": "boolean" }
        },
        "required": ["timezone", "datetime", "day_of_week", "is_dst"],
        "title": "TimeResult",
        "type": "object"
    })
}

fn local_zone() -> String {
    std::env::var(LOCAL_TIMEZONE)
        .ok()
        .filter(|name| zone(name).is_ok())
        .unwrap_or_else(|| "UTC".to_owned())
}

fn zone_description(which: &str, examples: &str, local: &str) -> String {
    let (prefix, whose) = match which {
        "" => (String::new(), "no timezone"),
        "source" => ("Source ".to_owned(), "no source timezone"),
        _ => ("Target ".to_owned(), "no target timezone"),
    };
    format!(
        "{prefix}IANA timezone name (e.g., {examples}). Use '{local}' as local timezone if {whose} provided by the user."
    )
}

fn current_time_schema() -> Value {
    let local = local_zone();
    json!({
        "properties": {
            "timezone": string_property(
                "Timezone",
                &zone_description("", "'America/New_York', 'Europe/London'", &local),
            )
        },
        "required": ["timezone"],
        "title": "get_current_timeArguments",
        "type": "object"
    })
}

fn convert_time_schema() -> Value {
    let local = local_zone();
    json!({
        "properties": {
            "source_timezone": string_property(
                "Source Timezone",
                &zone_description("source", "'America/New_York', 'Europe/London'", &local),
            ),
            "time": string_property("Time", "Time to convert in 24-hour format (HH:MM)"),
            "target_timezone": string_property(
                "Target Timezone",
                &zone_description("target", "'Asia/Tokyo', 'America/San_Francisco'", &local),
            )
        },
        "required": ["source_timezone", "time", "target_timezone"],
        "title": "convert_timeArguments",
        "type": "object"
    })
}

fn conversion_schema() -> Option<Value> {
    Some(json!({
        "properties": {
            "source": { "$ref": "#/$defs/TimeResult" },
            "target": { "$ref": "#/$defs/TimeResult" },
            "time_difference": { "title": "Time Difference", "type": "string" }
        },
        "required": ["source", "target", "time_difference"],
        "type": "object",
        "$defs": { "TimeResult": time_result_schema() },
        "title": "TimeConversionResult"
    }))
}

/// Runs tool `name`'s function `run` on its arguments, answering as the
/// reference does.
fn answer<A: serde::de::DeserializeOwned, R: Serialize>(
    name: &str,
    args: Value,
    run: fn(&A) -> Result<R, String>,
) -> CallResult {
    match serde_json::from_value::<A>(args) {
        Ok(args) => match run(&args) {
            Ok(result) => structured(&result),
            Err(why) => failure(name, why),
        },
        Err(e) => failure(name, e),
    }
}

/// A read-only tool of this plugin; its schemas are built only when listed.
fn tool(
    name: &'static str,
    description: &str,
    run: impl Fn(Value) -> CallResult + 'static,
    input: fn() -> Value,
    output: fn() -> Option<Value>,
) -> Tool {
    Tool::new(name, run)
        .description(description)
        .input_schema_with(input)
        .output_schema_with(output)
        .read_only()
        .non_destructive()
        .idempotent()
        .closed_world()
}

fn plugin() -> Plugin {
    Plugin::new()
        .add_tool(tool(
            "get_current_time",
            "Get current time in a specific timezone",
            |args| answer("get_current_time", args, current_time),
            current_time_schema,
            || Some(time_result_schema()),
        ))
        .add_tool(tool(
            "convert_time",
            "Convert time between timezones",
            |args| answer("convert_time", args, convert_time),
            convert_time_schema,
            conversion_schema,
        ))
}

export_plugin!(plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_worded_as_the_reference_words_them() {
        assert_eq!(hours_between(3600, 7200), "+1.0h");
        assert_eq!(hours_between(3600, 3600), "+0.0h");
        assert_eq!(hours_between(3600, -5 * 3600), "-6.0h");
        assert_eq!(hours_between(3600, 5 * 3600 + 45 * 60), "+4.75h");
        assert_eq!(hours_between(0, 5 * 3600 + 30 * 60), "+5.5h");
    }

    #[test]
    fn wall_clock_times_take_one_or_two_digits() {
        assert_eq!(wall_clock("9:5"), NaiveTime::from_hms_opt(9, 5, 0));
        assert_eq!(wall_clock("23:59"), NaiveTime::from_hms_opt(23, 59, 0));
        for bad in [
            "24:00", "12:60", "123:00", "12", "", "ab:cd", "+1:00", "12:00:00",
        ] {
            assert_eq!(wall_clock(bad), None, "{bad}");
        }
    }
}
