//! Tool search, for catalogues too big to hand a model whole (`[server]
//! tool_search`): the host offers `search_tools`, which ranks the tools the
//! caller may see against a query (BM25 over their names, titles and
//! descriptions; no model), and `call_tool`, which calls one of them by
//! name. With `tool_search = "only"`, `tools/list` holds just these two,
//! and the tools of plugins granted `call_tools` (code mode).

use crate::protocol::model::{to_json, Tool, ToolAnnotations};
use crate::registry::Catalogue;
use serde_json::Value;
use std::collections::HashMap;

/// The name of the search tool.
pub const SEARCH: &str = "search_tools";
/// The name of the tool that calls another.
pub const CALL: &str = "call_tool";

/// Results one search returns at most, and by default.
pub const MAX_RESULTS: usize = 50;
const DEFAULT_RESULTS: usize = 5;
/// Query terms used at most (the rest are ignored).
const MAX_QUERY_TERMS: usize = 32;
/// Bytes of a query read at most.
const MAX_QUERY_BYTES: usize = 1024;

/// Whether the host offers tool search.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolSearch {
    /// No.
    #[default]
    Off,
    /// Beside every tool.
    Offered,
    /// Instead of listing the tools.
    Only,
}

impl ToolSearch {
    /// Whether the search tools are offered.
    pub fn is_on(self) -> bool {
        self != ToolSearch::Off
    }
}

/// Whether `name` is one of the host's search tools.
pub fn is_reserved(name: &str) -> bool {
    name == SEARCH || name == CALL
}

/// The search tool's input schema (its limit's maximum is [`MAX_RESULTS`]).
const SEARCH_SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "query": { "type": "string", "description": "What the tool should do." },
        "limit": {
            "type": "integer", "minimum": 1, "maximum": 50,
            "description": "How many tools to return at most (default 5)."
        }
    },
    "required": ["query"]
}"#;

/// The call tool's input schema.
const CALL_SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "name": { "type": "string", "description": "The tool's name." },
        "arguments": { "type": "object", "description": "The tool's arguments." }
    },
    "required": ["name"]
}"#;

/// The two tools as listed.
pub fn definitions() -> [Value; 2] {
    let schema = |text| serde_json::from_str(text).expect("the search tools' schemas are JSON");
    let tool = |name: &str, title: &str, description: &str, input_schema| Tool {
        name: name.into(),
        title: Some(title.into()),
        description: Some(description.into()),
        input_schema,
        output_schema: None,
        annotations: None,
        execution: None,
        icons: Vec::new(),
        meta: None,
    };
    let mut search = tool(
        SEARCH,
        "Search tools",
        "Finds the tools that fit a task: give a few words saying what you need \
         (for example \"read a file\" or \"current time in Tokyo\"). Returns the \
         best matching tools with their descriptions and input schemas; call one \
         with call_tool.",
        schema(SEARCH_SCHEMA),
    );
    search.annotations = Some(ToolAnnotations {
        title: None,
        read_only_hint: Some(true),
        destructive_hint: None,
        idempotent_hint: None,
        open_world_hint: Some(false),
    });
    let call = tool(
        CALL,
        "Call a tool",
        "Calls a tool found with search_tools, by its name, with its arguments \
         (an object matching that tool's input schema).",
        schema(CALL_SCHEMA),
    );
    [to_json(&search), to_json(&call)]
}

/// The words of `text`: lowercase runs of letters and digits, split at
/// case changes (`readFile` → `read`, `file`) as well.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter()
}

/// One tool's words, counted.
struct Doc {
    terms: HashMap<String, u32>,
    len: u32,
}

/// The catalogue's tools, indexed for ranking (by place in the catalogue).
pub struct Index {
    docs: Vec<Doc>,
    /// In how many tools each word appears.
    df: HashMap<String, u32>,
    average_len: f64,
}

impl Index {
    /// The index of `catalogue`'s tools. A name counts twice.
    pub fn of(catalogue: &Catalogue) -> Self {
        let mut df: HashMap<String, u32> = HashMap::new();
        let docs: Vec<Doc> = catalogue
            .tools
            .iter()
            .map(|entry| {
                let tool = &entry.tool;
                let mut terms: HashMap<String, u32> = HashMap::new();
                let mut len = 0;
                let texts = [
                    Some(entry.name.as_str()),
                    Some(entry.name.as_str()),
                    tool.title.as_deref(),
                    tool.description.as_deref(),
                ];
                for word in texts.into_iter().flatten().flat_map(words) {
                    *terms.entry(word).or_default() += 1;
                    len += 1;
                }
                for term in terms.keys() {
                    *df.entry(term.clone()).or_default() += 1;
                }
                Doc { terms, len }
            })
            .collect();
        let total: u64 = docs.iter().map(|d| u64::from(d.len)).sum();
        let average_len = total as f64 / docs.len().max(1) as f64;
        Index {
            docs,
            df,
            average_len,
        }
    }

    /// The places of the best tools for `query` among those `visible`
    /// allows, best first (ties in catalogue order), at most `limit`; only
    /// tools that match some word.
    pub fn rank(&self, query: &str, visible: impl Fn(usize) -> bool, limit: usize) -> Vec<usize> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let query = crate::text::head(query, MAX_QUERY_BYTES);
        let mut terms: Vec<String> = words(query).collect();
        terms.sort();
        terms.dedup();
        terms.truncate(MAX_QUERY_TERMS);
        let n = self.docs.len() as f64;
        let mut scored: Vec<(f64, usize)> = self
            .docs
            .iter()
            .enumerate()
            .filter(|(i, _)| visible(*i))
            .filter_map(|(i, doc)| {
                let score: f64 = terms
                    .iter()
                    .filter_map(|term| {
                        let tf = f64::from(*doc.terms.get(term)?);
                        let df = f64::from(self.df[term]);
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        let norm = 1.0 - B + B * f64::from(doc.len) / self.average_len.max(1.0);
                        Some(idf * tf * (K1 + 1.0) / (tf + K1 * norm))
                    })
                    .sum();
                (score > 0.0).then_some((score, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(limit).map(|(_, i)| i).collect()
    }
}

/// The number of results asked for in `limit` (default 5, at most
/// [`MAX_RESULTS`]).
pub fn limit_of(limit: Option<&Value>) -> Result<usize, String> {
    match limit {
        None | Some(Value::Null) => Ok(DEFAULT_RESULTS),
        Some(value) => value
            .as_u64()
            .filter(|n| (1..=MAX_RESULTS as u64).contains(n))
            .map(|n| n as usize)
            .ok_or_else(|| format!("\"limit\" must be an integer from 1 to {MAX_RESULTS}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn words_split_at_case_and_punctuation() {
        let got: Vec<String> = words("readFile, list_dir.v2 HTTPServer").collect();
        assert_eq!(got, ["read", "file", "list", "dir", "v2", "httpserver"]);
    }

    #[tokio::test]
    async fn the_best_match_comes_first_and_hidden_tools_never() {
        let registry = crate::registry::tests::registry();
        registry.install(crate::registry::tests::entry(&registry, "hello", "hello").await);
        let catalogue = registry.catalogue();
        let index = Index::of(&catalogue);
        let place = |name: &str| catalogue.tools.iter().position(|t| t.name == name).unwrap();
        let found = index.rank("add two numbers", |_| true, 5);
        assert_eq!(found[0], place("add"));
        let found = index.rank("say hello to someone", |_| true, 5);
        assert_eq!(found[0], place("greet"));
        let hidden = place("greet");
        assert!(!index.rank("hello", |i| i != hidden, 5).contains(&hidden));
        assert!(index.rank("zzzz qqqq", |_| true, 5).is_empty());
        let [search, call] = definitions();
        let limit = &search["inputSchema"]["properties"]["limit"];
        assert_eq!(limit["maximum"], json!(MAX_RESULTS));
        assert_eq!(
            search["annotations"],
            json!({ "readOnlyHint": true, "openWorldHint": false })
        );
        assert_eq!(call["inputSchema"]["required"], json!(["name"]));
        assert!(call.get("annotations").is_none());
        assert_eq!(limit_of(None), Ok(5));
        assert!(limit_of(Some(&json!(0))).is_err());
        assert!(limit_of(Some(&json!(51))).is_err());
    }
}
