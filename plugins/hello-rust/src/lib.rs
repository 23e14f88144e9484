//! Example tools: greet, add, and a slow countdown that reports progress.

use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// a + b.
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct Countdown {
    /// How many steps to count down from.
    steps: u32,
    /// Milliseconds to wait at each step.
    #[serde(default)]
    delay_ms: u64,
}

fn countdown(args: Countdown) -> Result<String, String> {
    for step in 0..args.steps {
        if host::is_cancelled() {
            return Err(format!("cancelled after {step} steps"));
        }
        host::progress(
            f64::from(step + 1),
            Some(f64::from(args.steps)),
            Some("counting"),
        );
        host::info(format!("step {} of {}", step + 1, args.steps));
        std::thread::sleep(std::time::Duration::from_millis(args.delay_ms));
    }
    Ok(format!("counted down from {}", args.steps))
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool("greet", "Says hello to someone", |g: Greet| {
            format!("Hello, {}!", g.name)
        })
        .add_tool(
            Tool::new("add", |x: Add| Structured(Sum { sum: x.a + x.b }))
                .description("Adds two numbers")
                .read_only()
                .idempotent(),
        )
        .tool(
            "countdown",
            "Counts down, reporting progress and logging each step",
            countdown,
        )
}

export_plugin!(plugin);
