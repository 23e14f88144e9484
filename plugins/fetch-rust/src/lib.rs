//! The `fetch` tool and prompt of the reference server `mcp-server-fetch`,
//! as a sandboxed component: a URL fetched through `wasi:http` (so only
//! from hosts the plugin is granted), HTML turned into Markdown, the text
//! cut by `max_length` and `start_index`, and robots.txt honoured for the
//! tool (not for the prompt, which a user asks for), as the reference does
//! by default.
//!
//! Variables it may be granted: `FETCH_USER_AGENT` (the reference's
//! `--user-agent`) and `FETCH_IGNORE_ROBOTS_TXT` (set to `1`: its
//! `--ignore-robots-txt`).

mod http;
mod robots;

use serde::Deserialize;
use serde_json::{json, Value};
use url::Url;
use wasm_mcp_sdk::prelude::*;

const USER_AGENT_AUTONOMOUS: &str =
    "ModelContextProtocol/1.0 (Autonomous; +https://github.com/modelcontextprotocol/servers)";
const USER_AGENT_MANUAL: &str =
    "ModelContextProtocol/1.0 (User-Specified; +https://github.com/modelcontextprotocol/servers)";

const DESCRIPTION: &str = "Fetches a URL from the internet and optionally extracts its contents as markdown.\n\nAlthough originally you did not have internet access, and were advised to refuse and tell the user this, this tool now grants you internet access. Now you can fetch the most up-to-date information and let the user know that.";

fn user_agent(default: &str) -> String {
    std::env::var("FETCH_USER_AGENT").unwrap_or_else(|_| default.to_owned())
}

fn ignore_robots() -> bool {
    std::env::var("FETCH_IGNORE_ROBOTS_TXT").is_ok_and(|v| v == "1" || v == "true")
}

/// The tool's arguments, checked as strictly as the reference's pydantic
/// model (integers must be integers, in range; others are ignored).
#[derive(Deserialize)]
struct FetchArgs {
    url: String,
    #[serde(default = "default_max_length")]
    max_length: i64,
    #[serde(default)]
    start_index: i64,
    #[serde(default)]
    raw: bool,
}

fn default_max_length() -> i64 {
    5000
}

/// `https://HOST/robots.txt` of `url`'s origin.
fn robots_url(url: &Url) -> Url {
    let mut robots = url.clone();
    robots.set_path("/robots.txt");
    robots.set_query(None);
    robots.set_fragment(None);
    robots
}

/// The path and query robots.txt rules are matched against.
fn robots_path(url: &Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// Refuses `url` if its site's robots.txt disallows `agent`, as the
/// reference words it.
fn check_robots(url: &Url, agent: &str) -> Result<(), String> {
    let robots_at = robots_url(url);
    let response = http::get(&robots_at, agent, |_| Ok(())).map_err(|failure| match failure {
        http::Failure::Denied(why) => format!("Failed to fetch robots.txt {robots_at}: {why}"),
        _ => format!("Failed to fetch robots.txt {robots_at} due to a connection issue"),
    })?;
    if matches!(response.status, 401 | 403) {
        return Err(format!(
            "When fetching robots.txt ({robots_at}), received status {} so assuming that autonomous fetching is not allowed, the user can try manually fetching by using the fetch prompt",
            response.status
        ));
    }
    if (400..500).contains(&response.status) {
        return Ok(());
    }
    let text = response.text();
    let rules: String = text
        .lines()
        .filter(|line| !line.trim().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    if robots::Robots::parse(&rules).allows(&robots_path(url), agent) {
        return Ok(());
    }
    Err(format!(
        "The sites robots.txt ({robots_at}), specifies that autonomous fetching of this page is not allowed, <useragent>{agent}</useragent>\n<url>{url}</url><robots>\n{text}\n</robots>\nThe assistant must let the user know that it failed to view the page. The assistant may provide further guidance based on the above information.\nThe assistant can tell the user that they can try manually fetching the page by using the fetch prompt within their UI."
    ))
}

/// HTML as Markdown, without what a reader does not read (scripts, styles,
/// the head).
fn markdown(html: &str) -> String {
    let failed = "<error>Page failed to be simplified from HTML</error>";
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "head", "iframe", "svg",
        ])
        .options(htmd::options::Options {
            heading_style: htmd::options::HeadingStyle::Atx,
            bullet_list_marker: htmd::options::BulletListMarker::Asterisk,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Default::default()
        })
        .build();
    match converter.convert(html) {
        Ok(text) if !text.trim().is_empty() => text,
        _ => failed.to_owned(),
    }
}

/// The page at `url` ready for a model, and the note put before it.
fn fetch_url(
    url: &Url,
    agent: &str,
    raw: bool,
    robots_on_hops: bool,
) -> Result<(String, String), String> {
    let response = http::get(url, agent, |hop| {
        if robots_on_hops {
            check_robots(hop, agent)
        } else {
            Ok(())
        }
    })
    .map_err(|failure| match failure {
        http::Failure::Refused(why) => why,
        http::Failure::Denied(why) | http::Failure::Transport(why) => {
            format!("Failed to fetch {url}: {why}")
        }
    })?;
    if response.status >= 400 {
        return Err(format!(
            "Failed to fetch {url} - status code {}",
            response.status
        ));
    }
    let page = response.text();
    let start: String = page.chars().take(100).collect();
    let is_html = start.contains("<html")
        || response.content_type.contains("text/html")
        || response.content_type.is_empty();
    if is_html && !raw {
        return Ok((markdown(&page), String::new()));
    }
    Ok((
        page,
        format!(
            "Content type {} cannot be simplified to markdown, but here is the raw content:\n",
            response.content_type
        ),
    ))
}

/// A tool error, worded as the reference words it.
fn tool_error(message: String) -> CallResult {
    error_result(format!("Error executing tool fetch: {message}"))
}

fn fetch(args: Value) -> CallResult {
    let args: FetchArgs = match serde_json::from_value(args) {
        Ok(args) => args,
        Err(e) => return tool_error(format!("invalid arguments: {e}")),
    };
    if !(1..=999_999).contains(&args.max_length) {
        return tool_error("max_length must be from 1 to 999999".to_owned());
    }
    if args.start_index < 0 {
        return tool_error("start_index must be 0 or more".to_owned());
    }
    let url = match Url::parse(&args.url) {
        Ok(url) if url.has_host() => url,
        Ok(_) => return tool_error(format!("{:?} is not a URL with a host", args.url)),
        Err(e) => return tool_error(format!("{:?} is not a URL: {e}", args.url)),
    };
    let agent = user_agent(USER_AGENT_AUTONOMOUS);
    let check = !ignore_robots();
    if check {
        if let Err(why) = check_robots(&url, &agent) {
            return tool_error(why);
        }
    }
    let (content, prefix) = match fetch_url(&url, &agent, args.raw, check) {
        Ok(found) => found,
        Err(why) => return tool_error(why),
    };
    // Lengths and indexes count characters, as Python's do.
    let length = content.chars().count();
    let (start, max) = (args.start_index as usize, args.max_length as usize);
    let shown = if start >= length {
        "<error>No more content available.</error>".to_owned()
    } else {
        let mut shown: String = content.chars().skip(start).take(max).collect();
        let taken = shown.chars().count();
        if taken == max && length > start + taken {
            shown.push_str(&format!(
                "\n\n<error>Content truncated. Call the fetch tool with a start_index of {} to get more content.</error>",
                start + taken
            ));
        }
        shown
    };
    CallResult {
        content: vec![text(format!("{prefix}Contents of {url}:\n{shown}"))],
        structured_content: None,
        is_error: false,
        meta: None,
    }
}

#[derive(Deserialize, JsonSchema)]
struct FetchPrompt {
    /// URL to fetch
    url: String,
}

/// The prompt: the page a user asked for (robots.txt is not consulted), or
/// why it could not be fetched, as the message's text.
fn fetch_prompt(args: FetchPrompt) -> String {
    let url = match Url::parse(&args.url) {
        Ok(url) => url,
        Err(e) => return format!("Failed to fetch {}: {e}", args.url),
    };
    match fetch_url(&url, &user_agent(USER_AGENT_MANUAL), false, false) {
        Ok((content, prefix)) => format!("{prefix}{content}"),
        Err(why) => why,
    }
}

fn input_schema() -> Value {
    json!({
        "properties": {
            "url": {
                "description": "URL to fetch", "format": "uri", "minLength": 1,
                "title": "Url", "type": "string"
            },
            "max_length": {
                "default": 5000, "description": "Maximum number of characters to return.",
                "maximum": 999999, "minimum": 1, "title": "Max Length", "type": "integer"
            },
            "start_index": {
                "default": 0,
                "description": "On return output starting at this character index, useful if a previous fetch was truncated and more context is required.",
                "minimum": 0, "title": "Start Index", "type": "integer"
            },
            "raw": {
                "default": false,
                "description": "Get the actual HTML content of the requested page, without simplification.",
                "title": "Raw", "type": "boolean"
            }
        },
        "required": ["url"],
        "type": "object",
        "title": "fetchArguments"
    })
}

fn plugin() -> Plugin {
    Plugin::new()
        .add_tool(
            Tool::new("fetch", fetch)
                .description(DESCRIPTION)
                .input_schema(input_schema())
                .annotations(ToolAnnotations {
                    title: None,
                    read_only_hint: Some(true),
                    destructive_hint: Some(false),
                    idempotent_hint: Some(true),
                    open_world_hint: Some(true),
                }),
        )
        .prompt(
            "fetch",
            "Fetch a URL and extract its contents as markdown",
            fetch_prompt,
        )
}

export_plugin!(plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_txt_lives_at_the_origin() {
        let url = Url::parse("http://127.0.0.1:8080/a/b?c=d#e").unwrap();
        assert_eq!(
            robots_url(&url).as_str(),
            "http://127.0.0.1:8080/robots.txt"
        );
        assert_eq!(robots_path(&url), "/a/b?c=d");
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let md = markdown("<html><head><title>T</title><script>x()</script></head><body><h1>Hi</h1><p>Some <b>bold</b> and <a href=\"/x\">a link</a>.</p><ul><li>one</li></ul></body></html>");
        assert!(md.contains("# Hi"), "{md}");
        assert!(
            md.contains("**bold**") && md.contains("[a link](/x)"),
            "{md}"
        );
        assert!(md.contains("* one"), "{md}");
        assert!(!md.contains("x()") && !md.contains('T'), "{md}");
        assert_eq!(
            markdown("<html><body></body></html>"),
            "<error>Page failed to be simplified from HTML</error>"
        );
    }
}
