//! What a failed build said, made short for a client: the compiler's
//! actual error first, then the rest of its output without backtraces
//! (the Rust ones a tool prints under `RUST_BACKTRACE`, every frame but
//! the last of a Python traceback, a Node stack), and the text a wrapper
//! repeats under `Caused by:` once only.

/// `output` (what a build tool wrote, as kept for its error) with its
/// first error line (and where it is) leading, and backtraces removed.
pub(super) fn summarize(output: &str) -> String {
    let kept = without_repeats(&without_backtraces(output));
    match headline(&kept) {
        Some(head) => format!("{head}\n\n{}", kept.join("\n")),
        None => kept.join("\n"),
    }
}

/// The first error line of `output` (with where it is, when the tool says
/// it on the line before or after), or `None` when no line looks like one.
pub(super) fn first_error(output: &str) -> Option<String> {
    headline(&without_repeats(&without_backtraces(output)))
}

/// Whether a line states an error, in the words of the toolchains `dev`
/// runs: rustc and Cargo, clang, Go, Python and JavaScript exceptions.
fn is_error_line(line: &str) -> bool {
    let line = line.trim_end();
    if line.starts_with(char::is_whitespace) {
        return false;
    }
    let rust = line.starts_with("error:") || line.starts_with("error[");
    let cargo_summary = line.starts_with("error: could not compile");
    let clang = line.contains(": error:") || line.contains(": fatal error:");
    let go = is_go_error(line);
    let exception = line
        .split_once(": ")
        .map_or(line, |(name, _)| name)
        .rsplit('.')
        .next()
        .is_some_and(|name| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && (name.ends_with("Error") || name.ends_with("Exception"))
                && name != "AssertionError"
        });
    (rust && !cargo_summary) || clang || go || exception
}

/// `./main.go:14:22: undefined: x`: a Go file position, then the message.
fn is_go_error(line: &str) -> bool {
    let Some((file, rest)) = line.split_once(".go:") else {
        return false;
    };
    let mut numbers = rest.splitn(3, ':');
    !file.contains(' ')
        && numbers
            .next()
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `/path/app.js:30`: where Node says a syntax error is.
fn is_node_position(line: &str) -> bool {
    line.trim_end().rsplit_once(':').is_some_and(|(file, n)| {
        (file.ends_with(".js") || file.ends_with(".mjs"))
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

fn headline(lines: &[String]) -> Option<String> {
    let at = lines.iter().position(|l| is_error_line(l))?;
    let mut head = lines[at].trim_end().to_owned();
    // rustc says where on the next line; Python on the frame before.
    if let Some(next) = lines
        .get(at + 1)
        .filter(|l| l.trim_start().starts_with("--> "))
    {
        head = format!("{head}\n{}", next.trim_end());
    } else if let Some(frame) = lines[..at]
        .iter()
        .rev()
        .take(4)
        .find_map(|l| l.find("File \"").map(|i| &l[i..]))
    {
        head = format!("{}\n{head}", frame.trim());
    } else if let Some(place) = lines[..at]
        .iter()
        .rev()
        .take(5)
        .find(|l| is_node_position(l))
    {
        head = format!("{}\n{head}", place.trim());
    }
    Some(head)
}

/// The lines of `output` without Rust backtraces, Node stacks and all but
/// the last frame of each Python traceback.
fn without_backtraces(output: &str) -> Vec<String> {
    let mut kept = Vec::new();
    let mut lines = output.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.eq_ignore_ascii_case("stack backtrace:") {
            // Numbered frames, each with an `at` line under it.
            while lines.next_if(|l| is_rust_frame(l)).is_some() {}
            continue;
        }
        if trimmed.ends_with("Traceback (most recent call last):") {
            let indent = indent_of(line);
            let mut frames = Vec::new();
            while let Some(frame) = lines.next_if(|l| indent_of(l) > indent || l.trim().is_empty())
            {
                frames.push(frame);
            }
            let last = frames
                .iter()
                .rposition(|f| f.trim_start().starts_with("File \""))
                .unwrap_or(frames.len());
            // A traceback that ends in the build tool's own code says
            // nothing about the plugin's.
            let in_tool = frames.get(last).is_some_and(|f| {
                ["site-packages", "/bin/", "/lib/python"]
                    .iter()
                    .any(|place| f.contains(place))
            });
            if !in_tool {
                kept.extend(frames[last..].iter().map(|f| f.to_string()));
            }
            continue;
        }
        let node_frame = ["file://", "node:", ".js:", ".mjs:"]
            .iter()
            .any(|place| trimmed.contains(place));
        if trimmed.starts_with("at ") && node_frame {
            // A Node stack frame.
            continue;
        }
        kept.push(line.to_owned());
    }
    kept
}

fn is_rust_frame(line: &str) -> bool {
    let t = line.trim_start();
    let numbered = t
        .split_once(": ")
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    numbered || t.starts_with("at ") || t.is_empty()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `lines` without the `Caused by:` sections whose every line was said
/// before (a wrapper repeating its tool's message).
fn without_repeats(lines: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "Caused by:" {
            let end = lines[i + 1..]
                .iter()
                .position(|l| l.trim() == "Caused by:")
                .map_or(lines.len(), |n| i + 1 + n);
            let said_before = lines[i + 1..end]
                .iter()
                .filter(|l| !l.trim().is_empty())
                .all(|l| kept.iter().any(|k| k.trim() == l.trim()));
            if !said_before {
                kept.extend_from_slice(&lines[i..end]);
            }
            i = end;
            continue;
        }
        kept.push(lines[i].clone());
        i += 1;
    }
    while kept.last().is_some_and(|l| l.trim().is_empty()) {
        kept.pop();
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_syntax_error_leads_without_its_backtraces() {
        let output = "Traceback (most recent call last):\n  File \"/venv/bin/componentize-py\", line 8, in <module>\n    sys.exit(script())\n             ^^^^^^^^\nAssertionError: Traceback (most recent call last):\n  File \"/0/app.py\", line 59\n    def broken(:\n               ^\nSyntaxError: invalid syntax\n\n\nCaused by:\n    SyntaxError: invalid syntax\n\nStack backtrace:\n   0: anyhow::error::msg\n             at /src/backtrace.rs:10:14\n   1: componentize\n             at /src/lib.rs:9:1\n";
        let summary = summarize(output);
        assert!(
            summary.starts_with("File \"/0/app.py\", line 59\nSyntaxError: invalid syntax\n"),
            "{summary}"
        );
        assert!(!summary.contains("backtrace.rs"), "{summary}");
        assert!(!summary.contains("componentize-py\", line 8"), "{summary}");
        assert!(!summary.contains("Caused by"), "{summary}");
        assert!(summary.contains("def broken(:"), "{summary}");
    }

    #[test]
    fn each_toolchain_s_first_error_leads() {
        let cargo = "   Compiling x v0.1.0\nwarning: unused\nerror[E0425]: cannot find value `y` in this scope\n --> src/lib.rs:3:5\n  |\nerror: could not compile `x`";
        assert_eq!(
            first_error(cargo).unwrap(),
            "error[E0425]: cannot find value `y` in this scope\n --> src/lib.rs:3:5"
        );
        let clang = "plugin.c:113:20: error: use of undeclared identifier 'nope'\n  strcpy(greeting, nope);\n1 error generated.";
        assert_eq!(
            first_error(clang).unwrap(),
            "plugin.c:113:20: error: use of undeclared identifier 'nope'"
        );
        let go = "# g1\n./main.go:14:22: undefined: x";
        assert_eq!(first_error(go).unwrap(), "./main.go:14:22: undefined: x");
        let node = "/tmp/app.js:30\nexport const tools = {{;\n                      ^\n\nSyntaxError: Unexpected token '{'\n    at internalCompileFunction (node:internal/vm:76:18)\n    at wrapSafe (node:internal/modules/cjs/loader:1283:20)";
        let summary = summarize(node);
        assert!(
            summary.starts_with("/tmp/app.js:30\nSyntaxError: Unexpected token '{'\n"),
            "{summary}"
        );
        assert!(!summary.contains("wrapSafe"), "{summary}");
        assert_eq!(first_error("all fine\nnothing to see"), None);
    }
}
