//! OpenTelemetry traces over OTLP/HTTP (JSON), off unless `[traces]
//! endpoint` is set: a span per request (its parent taken from the W3C
//! trace context in the request's `_meta`, when the client sends one), per
//! plugin call (instantiating it, running it, and each question it asks
//! the client) and per compile.
//!
//! The spans are `tracing` spans of level DEBUG under `wasm_mcp`: with
//! traces off and the log at INFO they are disabled where they are made,
//! and cost nothing.

use crate::config::TracesSection;
use anyhow::{Context as _, Result};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::filter::FilterExt as _;
use tracing_subscriber::layer::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The most bytes of a value a client sent (a request id) kept in a span.
pub const MAX_CLIENT_VALUE_BYTES: usize = 64;

/// Spans waiting to be sent, at most; more are dropped (and counted by the
/// SDK's own log) until the collector catches up.
pub const MAX_QUEUED_SPANS: usize = 2048;

/// The longest `tracestate` continued (the W3C limit is 512 characters); a
/// longer one is ignored.
const MAX_TRACESTATE_BYTES: usize = 512;

/// The provider, flushed at exit.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
/// Whether traces are sent.
static ON: AtomicBool = AtomicBool::new(false);

/// The layer that sends the host's spans as `config` says (`None`: it
/// names no endpoint), from replica `replica` when it is one (its name is
/// the resource's `service.instance.id`). Made before the async runtime
/// starts; [`flush`] at exit.
pub fn layer<S>(config: &TracesSection, replica: Option<String>) -> Result<Option<impl Layer<S>>>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let Some(endpoint) = &config.endpoint else {
        return Ok(None);
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(endpoint)
        .build()
        .with_context(|| format!("[traces] endpoint {endpoint}"))?;
    let mut resource =
        opentelemetry_sdk::Resource::builder().with_service_name(config.service_name.clone());
    if let Some(replica) = replica {
        resource =
            resource.with_attribute(opentelemetry::KeyValue::new("service.instance.id", replica));
    }
    let resource = resource.build();
    let batch = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUED_SPANS)
                .build(),
        )
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batch)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("wasm-mcp");
    let _ = PROVIDER.set(provider);
    ON.store(true, Ordering::Relaxed);
    // Spans only: log events (whose texts may quote what a plugin or a
    // client sent) stay in the log and are not kept in spans.
    let ours = tracing_subscriber::filter::Targets::new()
        .with_target("wasm_mcp", tracing::Level::DEBUG)
        .and(tracing_subscriber::filter::filter_fn(|meta| meta.is_span()));
    Ok(Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(ours),
    ))
}

/// Sends the spans not sent yet and stops, waiting at most half a second
/// for the collector (blocking; call it outside the runtime).
pub fn flush() {
    if let Some(provider) = PROVIDER.get() {
        let _ = provider.shutdown_with_timeout(std::time::Duration::from_millis(500));
    }
}

/// Makes `span` a child of the W3C trace context in `params._meta`
/// (`traceparent`, `tracestate`), when traces are on and there is one.
pub fn continue_from(span: &tracing::Span, params: &Map<String, Value>) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        return;
    };
    let mut carrier = HashMap::new();
    for key in ["traceparent", "tracestate"] {
        if let Some(value) = meta.get(key).and_then(Value::as_str) {
            if value.len() <= MAX_TRACESTATE_BYTES {
                carrier.insert(key.to_owned(), value.to_owned());
            }
        }
    }
    if carrier.contains_key("traceparent") {
        let parent = TraceContextPropagator::new().extract(&carrier);
        let _ = span.set_parent(parent);
    }
}

/// The W3C trace id of the request in `span` with `params`: its span's
/// when traces are on, else the one in `_meta.traceparent`, if valid.
pub fn trace_id(span: &tracing::Span, params: &Map<String, Value>) -> Option<String> {
    use opentelemetry::trace::TraceContextExt as _;
    if ON.load(Ordering::Relaxed) {
        let context = span.context();
        let span_context = context.span().span_context().clone();
        if span_context.is_valid() {
            return Some(span_context.trace_id().to_string());
        }
    }
    let parent = params.get("_meta")?.get("traceparent")?.as_str()?;
    let mut parts = parent.split('-');
    let (_version, id) = (parts.next()?, parts.next()?);
    let valid = id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && id.bytes().any(|b| b != b'0');
    valid.then(|| id.to_owned())
}

/// A request's method as recorded in its span: the protocol's name for it,
/// or `"other"` for any method outside the protocol's set (whatever a
/// client sends, the recorded names are few and short).
pub fn method_name(method: Option<crate::protocol::Method>) -> &'static str {
    method.map_or("other", crate::protocol::Method::as_str)
}

/// A value a client sent, shown as JSON cut to at most
/// [`MAX_CLIENT_VALUE_BYTES`] (then `…`), without writing the rest out.
pub struct Excerpt<'a>(pub &'a Value);

impl std::fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        /// Keeps the first bytes written (whole characters), then refuses.
        struct Capped {
            text: String,
            full: bool,
        }
        impl std::fmt::Write for Capped {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                for c in s.chars() {
                    if self.text.len() + c.len_utf8() > MAX_CLIENT_VALUE_BYTES {
                        self.full = true;
                        return Err(std::fmt::Error);
                    }
                    self.text.push(c);
                }
                Ok(())
            }
        }
        let mut capped = Capped {
            text: String::new(),
            full: false,
        };
        let _ = std::fmt::write(&mut capped, format_args!("{}", self.0));
        f.write_str(&capped.text)?;
        if capped.full {
            f.write_str("…")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_values_are_cut_short_and_unknown_methods_are_one_name() {
        let long = Value::from("x".repeat(1 << 20));
        let shown = Excerpt(&long).to_string();
        assert!(
            shown.len() <= MAX_CLIENT_VALUE_BYTES + "…".len(),
            "{}",
            shown.len()
        );
        assert!(shown.starts_with("\"xxx") && shown.ends_with('…'));
        assert_eq!(Excerpt(&Value::from(7)).to_string(), "7");
        let accents = Value::from("é".repeat(100));
        assert!(Excerpt(&accents).to_string().ends_with('…'));
        assert_eq!(
            method_name(crate::protocol::Method::parse("tools/call")),
            "tools/call"
        );
        assert_eq!(
            method_name(crate::protocol::Method::parse(&"z".repeat(4096))),
            "other"
        );
    }
}
