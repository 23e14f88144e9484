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
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The provider, flushed at exit.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
/// Whether traces are sent.
static ON: AtomicBool = AtomicBool::new(false);

/// The layer that sends the host's spans as `config` says (`None`: it
/// names no endpoint). Made before the async runtime starts; [`flush`] at
/// exit.
pub fn layer<S>(config: &TracesSection) -> Result<Option<impl Layer<S>>>
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
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("wasm-mcp");
    let _ = PROVIDER.set(provider);
    ON.store(true, Ordering::Relaxed);
    let ours =
        tracing_subscriber::filter::Targets::new().with_target("wasm_mcp", tracing::Level::DEBUG);
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
            carrier.insert(key.to_owned(), value.to_owned());
        }
    }
    if carrier.contains_key("traceparent") {
        let parent = TraceContextPropagator::new().extract(&carrier);
        let _ = span.set_parent(parent);
    }
}
