//! The list methods' items as JSON text, prepared once per catalogue and
//! spliced into every page that lists them: a `tools/list` costs a copy
//! of the text, not a conversion and a serialization of every item.

use super::access::{Item, Rule, View};
use super::search::{self, ToolSearch};
use super::{convert, ServerOptions};
use crate::protocol::model::{CacheScope, Caching, Envelope};
use crate::protocol::{Caching as MethodCaching, Method, RequestId};
use crate::registry::{Catalogue, ToolEntry};
use parking_lot::Mutex;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

/// Views (which items one kind of caller sees) kept per catalogue at
/// most; beyond, they are made again as needed.
const MAX_VIEWS: usize = 256;

/// The items of one catalogue as JSON text, in its order (so a page is a
/// slice of them, as of the catalogue). It does not keep the catalogue
/// alive: a replaced plugin is freed at once, listed again or not.
pub(super) struct PreparedLists {
    catalogue: Weak<Catalogue>,
    tools: Vec<Box<RawValue>>,
    /// For revisions before `outputSchema`, made when one first lists.
    tools_without_output: OnceLock<Vec<Box<RawValue>>>,
    resources: Vec<Box<RawValue>>,
    templates: Vec<Box<RawValue>>,
    prompts: Vec<Box<RawValue>>,
    /// Each item's access rule, per list (none without a policy).
    rules: [Vec<ItemRule>; 4],
    /// Whether the tools list starts with the search tools (and which).
    search: ToolSearch,
    /// The tools, indexed for tool search, made when first searched.
    index: OnceLock<search::Index>,
    /// The items each view sees, per list, made when first listed.
    views: Mutex<HashMap<ViewKey, Arc<[u32]>>>,
}

/// Who sees one listed item.
struct ItemRule {
    /// Its requirements ([`super::Policy::rule`]).
    rule: Rule,
    /// Its plugin and its name there, for profiles (`None`: a host tool,
    /// in every profile).
    id: Option<(String, String)>,
}

impl ItemRule {
    fn of(policy: &super::Policy, item: Item<'_>) -> Self {
        ItemRule {
            rule: policy.rule(&item),
            id: Some((item.plugin().to_owned(), item.name().to_owned())),
        }
    }
}

/// A list (by [`List::slot`]) as one view sees it.
type ViewKey = (usize, View);

/// Which list.
#[derive(Clone, Copy)]
pub(super) enum List {
    /// `tools/list`; `false` leaves out `outputSchema`.
    Tools(bool),
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
    /// `prompts/list`.
    Prompts,
}

impl List {
    /// The method that lists it.
    fn method(self) -> Method {
        match self {
            List::Tools(_) => Method::ListTools,
            List::Resources => Method::ListResources,
            List::Templates => Method::ListResourceTemplates,
            List::Prompts => Method::ListPrompts,
        }
    }

    /// The key of the items in the result.
    fn key(self) -> &'static str {
        match self {
            List::Tools(_) => "tools",
            List::Resources => "resources",
            List::Templates => "resourceTemplates",
            List::Prompts => "prompts",
        }
    }

    /// Its place among the lists with rules.
    fn slot(self) -> usize {
        match self {
            List::Tools(_) => 0,
            List::Resources => 1,
            List::Templates => 2,
            List::Prompts => 3,
        }
    }
}

fn texts<T>(items: &[T], render: impl Fn(&T) -> Value) -> Vec<Box<RawValue>> {
    items
        .iter()
        .map(|item| serde_json::value::to_raw_value(&render(item)).expect("JSON values serialize"))
        .collect()
}

/// The tools `tools/list` shows of `catalogue` (after the search tools,
/// when offered): all of them; those without a search tool's name; or,
/// with search only, the tools of plugins granted `call_tools` (code mode:
/// a model finds tools with `search_tools` and calls many in one script).
///
/// A tool for its view only (MCP Apps) is never listed.
fn listed_tools(catalogue: &Catalogue, search: ToolSearch) -> Vec<&ToolEntry> {
    let for_model = || catalogue.tools.iter().filter(|t| t.for_model);
    match search {
        ToolSearch::Off => for_model().collect(),
        ToolSearch::Offered => {
            let (shadowed, listed): (Vec<_>, Vec<_>) =
                for_model().partition(|t| search::is_reserved(&t.name));
            for tool in shadowed {
                tracing::warn!(
                    plugin = tool.plugin.name(),
                    "tool {} is not served while [server] tool_search is on: the host's search \
                     tools use its name",
                    tool.name
                );
            }
            listed
        }
        ToolSearch::Only => for_model()
            .filter(|t| t.plugin.grants().tool_calls.is_some() && !search::is_reserved(&t.name))
            .collect(),
    }
}

/// The tools as listed, with `outputSchema` or not.
fn tool_texts(catalogue: &Catalogue, search: ToolSearch, output: bool) -> Vec<Box<RawValue>> {
    let extra = if search.is_on() {
        search::definitions().to_vec()
    } else {
        Vec::new()
    };
    let mut texts = texts(&extra, Clone::clone);
    texts.extend(
        listed_tools(catalogue, search)
            .into_iter()
            .map(|t| raw(&convert::tool(t, output))),
    );
    texts
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("JSON values serialize")
}

impl PreparedLists {
    fn new(catalogue: &Arc<Catalogue>, options: &ServerOptions) -> Self {
        let (policy, search) = (&*options.access, options.tool_search);
        let rules = if policy.is_open() {
            Default::default()
        } else {
            let rule = |item| ItemRule::of(policy, item);
            let extra = if search.is_on() { 2 } else { 0 };
            let host_tool = || ItemRule {
                rule: Rule::default(),
                id: None,
            };
            [
                std::iter::repeat_with(host_tool)
                    .take(extra)
                    .chain(
                        listed_tools(catalogue, search)
                            .into_iter()
                            .map(|t| rule(Item::tool(t.plugin.name(), &t.tool))),
                    )
                    .collect(),
                (catalogue.resources.iter())
                    .map(|r| match &r.skill_file {
                        Some((skill, _)) => rule(Item::skill(r.plugin.name(), skill)),
                        None => rule(Item::resource(r.plugin.name(), &r.resource.uri)),
                    })
                    .collect(),
                (catalogue.templates.iter())
                    .map(|t| rule(Item::resource(t.plugin.name(), &t.template.uri_template)))
                    .collect(),
                (catalogue.prompts.iter())
                    .map(|p| rule(Item::prompt(p.plugin.name(), &p.prompt.name)))
                    .collect(),
            ]
        };
        PreparedLists {
            rules,
            search,
            index: OnceLock::new(),
            views: Mutex::default(),
            catalogue: Arc::downgrade(catalogue),
            tools: tool_texts(catalogue, search, true),
            tools_without_output: OnceLock::new(),
            resources: texts(&catalogue.resources, |r| convert::resource(&r.resource)),
            templates: texts(&catalogue.templates, |t| convert::template(&t.template)),
            prompts: texts(&catalogue.prompts, |p| convert::prompt(&p.name, &p.prompt)),
        }
    }

    /// The catalogue's tools indexed for tool search (`catalogue` is the
    /// one these lists are of).
    pub(super) fn index(&self, catalogue: &Catalogue) -> &search::Index {
        self.index.get_or_init(|| search::Index::of(catalogue))
    }

    /// Whether these are the lists of `catalogue`. (While the weak
    /// reference upgrades, no other catalogue can have its address.)
    fn are_of(&self, catalogue: &Arc<Catalogue>) -> bool {
        self.catalogue
            .upgrade()
            .is_some_and(|mine| Arc::ptr_eq(&mine, catalogue))
    }

    /// The places of the items of `list` that `view` sees.
    pub(super) fn visible(&self, list: List, view: &View) -> Arc<[u32]> {
        let key = (list.slot(), view.clone());
        if let Some(shown) = self.views.lock().get(&key) {
            return shown.clone();
        }
        let rules = &self.rules[list.slot()];
        let shown: Arc<[u32]> = (0..self.items(list).len())
            .filter(|&i| {
                rules.get(i).is_none_or(|item| {
                    let id = item.id.as_ref().map(|(p, n)| (p.as_str(), n.as_str()));
                    view.sees_named(&item.rule, id)
                })
            })
            .map(|i| i as u32)
            .collect();
        let mut views = self.views.lock();
        if views.len() >= MAX_VIEWS {
            views.clear();
        }
        views.insert(key, shown.clone());
        shown
    }

    /// The items of `list` (made by [`Prepared::of`]).
    pub(super) fn items(&self, list: List) -> &[Box<RawValue>] {
        match list {
            List::Tools(true) => &self.tools,
            List::Tools(false) => self.tools_without_output.get().map_or(&[], Vec::as_slice),
            List::Resources => &self.resources,
            List::Templates => &self.templates,
            List::Prompts => &self.prompts,
        }
    }
}

/// The prepared lists of the catalogue listed last.
#[derive(Default)]
pub(super) struct Prepared(Mutex<Option<Arc<PreparedLists>>>);

impl Prepared {
    /// The lists of `catalogue` (as `options` say), with `list` made:
    /// those made before while it is the current one; else made now, once.
    pub(super) fn of(
        &self,
        catalogue: &Arc<Catalogue>,
        list: List,
        options: &ServerOptions,
    ) -> Arc<PreparedLists> {
        let lists = {
            let mut current = self.0.lock();
            match &*current {
                Some(lists) if lists.are_of(catalogue) => lists.clone(),
                _ => {
                    let lists = Arc::new(PreparedLists::new(catalogue, options));
                    *current = Some(lists.clone());
                    lists
                }
            }
        };
        if let List::Tools(false) = list {
            lists
                .tools_without_output
                .get_or_init(|| tool_texts(catalogue, lists.search, false));
        }
        lists
    }
}

/// One page of a list, as prepared: the answer to a list request.
pub(super) struct Page {
    pub(super) lists: Arc<PreparedLists>,
    pub(super) list: List,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) next_cursor: Option<String>,
    /// The places of the items this caller sees (`None`: all of them);
    /// `start` and `end` count among these.
    pub(super) shown: Option<Arc<[u32]>>,
}

/// The 2026-07-28 envelope of a result of `method` from `server`. The
/// one rule for its caching hints: a list (and `skills/get`) may be reused
/// for the configured time, by anyone when every caller sees the same
/// items (an open access policy), else by the requester only
/// (`private`); `server/discover` says the same to everyone (`public`);
/// a resource read is private and not to be reused (`ttlMs` 0).
pub(super) fn envelope(options: &ServerOptions, method: Option<Method>) -> Envelope<'_> {
    let caching = match method.map_or(MethodCaching::None, Method::caching) {
        MethodCaching::List => {
            let shared = method == Some(Method::Discover) || options.access.is_open();
            Some(Caching {
                ttl_ms: options.list_ttl_ms,
                scope: if shared {
                    CacheScope::Public
                } else {
                    CacheScope::Private
                },
            })
        }
        MethodCaching::Private => Some(Caching {
            ttl_ms: 0,
            scope: CacheScope::Private,
        }),
        MethodCaching::None => None,
    };
    Envelope::complete(options.server_info(), caching)
}

/// The items of a page, by place among all the items.
struct Picked<'a> {
    items: &'a [Box<RawValue>],
    places: &'a [u32],
}

impl Serialize for Picked<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.places.iter().map(|&i| &self.items[i as usize]))
    }
}

struct PageResult<'a> {
    page: &'a Page,
    envelope: Option<Envelope<'a>>,
}

impl Serialize for PageResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let page = self.page;
        let mut map = serializer.serialize_map(None)?;
        let items = page.lists.items(page.list);
        match &page.shown {
            None => map.serialize_entry(page.list.key(), &items[page.start..page.end])?,
            Some(shown) => {
                let places = &shown[page.start..page.end];
                map.serialize_entry(page.list.key(), &Picked { items, places })?
            }
        }
        if let Some(next) = &page.next_cursor {
            map.serialize_entry("nextCursor", next)?;
        }
        if let Some(envelope) = &self.envelope {
            envelope.serialize_into(&mut map)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Response<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: PageResult<'a>,
}

impl Page {
    /// The response to request `id` that carries this page; `stateless`
    /// adds what 2026-07-28 requires of a list result.
    pub(super) fn response(
        &self,
        id: &RequestId,
        options: &ServerOptions,
        stateless: bool,
    ) -> String {
        let envelope = stateless.then(|| envelope(options, Some(self.list.method())));
        let response = Response {
            jsonrpc: "2.0",
            id,
            result: PageResult {
                page: self,
                envelope,
            },
        };
        serde_json::to_string(&response).expect("JSON text serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::tests::{entry, registry};
    use crate::server::{Server, ServerOptions};
    use serde_json::json;

    /// Every page of `list` as the client gets it, and the items as
    /// converted one by one.
    fn pages(server: &Server, list: List, stateless: bool) -> (Vec<Value>, Vec<Value>) {
        let catalogue = server.registry.catalogue();
        let lists = server
            .prepared
            .of(&catalogue, list, &ServerOptions::default());
        let len = lists.items(list).len();
        let mut pages = Vec::new();
        let mut cursor = None;
        loop {
            let (range, next_cursor) =
                crate::registry::pagination::bounds(len, cursor.as_deref(), 2).unwrap();
            let page = Page {
                lists: lists.clone(),
                list,
                start: range.start,
                end: range.end,
                next_cursor: next_cursor.clone(),
                shown: None,
            };
            pages.push(
                serde_json::from_str(&page.response(&json!(7), &server.options, stateless))
                    .unwrap(),
            );
            match next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let converted = match list {
            List::Tools(output) => catalogue
                .tools
                .iter()
                .map(|t| convert::tool(t, output))
                .collect(),
            List::Resources => catalogue
                .resources
                .iter()
                .map(|r| convert::resource(&r.resource))
                .collect(),
            List::Templates => catalogue
                .templates
                .iter()
                .map(|t| convert::template(&t.template))
                .collect(),
            List::Prompts => catalogue
                .prompts
                .iter()
                .map(|p| convert::prompt(&p.name, &p.prompt))
                .collect(),
        };
        (pages, converted)
    }

    #[tokio::test]
    async fn pages_splice_the_items_as_converted_and_are_made_once_per_catalogue() {
        let registry = registry();
        for (name, component) in [("hello", "hello"), ("notes", "notes"), ("again", "hello")] {
            registry.install(entry(&registry, name, component).await);
        }
        let server = Server::new(registry.clone(), ServerOptions::default());
        let lists = [
            List::Tools(true),
            List::Tools(false),
            List::Resources,
            List::Templates,
            List::Prompts,
        ];
        for list in lists {
            for stateless in [true, false] {
                let (pages, converted) = pages(&server, list, stateless);
                let mut items = Vec::new();
                for (i, page) in pages.iter().enumerate() {
                    assert_eq!(page["jsonrpc"], "2.0");
                    assert_eq!(page["id"], 7);
                    let result = page["result"].as_object().unwrap();
                    items.extend(result[list.key()].as_array().unwrap().iter().cloned());
                    assert_eq!(result.contains_key("nextCursor"), i + 1 < pages.len());
                    assert_eq!(result.contains_key("ttlMs"), stateless);
                    if stateless {
                        assert_eq!(result["resultType"], "complete");
                        assert_eq!(result["cacheScope"], "public");
                        assert_eq!(
                            result["_meta"][crate::protocol::meta::SERVER_INFO],
                            crate::protocol::model::to_json(&server.server_info())
                        );
                    }
                }
                assert_eq!(items, converted);
            }
        }
        assert!(pages(&server, List::Tools(true), true).1.len() == 6);
        let without = pages(&server, List::Tools(false), true).1;
        assert!(without.iter().all(|t| t.get("outputSchema").is_none()));

        // The same catalogue, the same lists; a changed one, new lists.
        let catalogue = registry.catalogue();
        let first = server
            .prepared
            .of(&catalogue, List::Prompts, &ServerOptions::default());
        assert!(Arc::ptr_eq(
            &first,
            &server
                .prepared
                .of(&catalogue, List::Resources, &ServerOptions::default())
        ));
        registry.install(entry(&registry, "more", "notes").await);
        let changed = server.prepared.of(
            &registry.catalogue(),
            List::Prompts,
            &ServerOptions::default(),
        );
        assert!(!Arc::ptr_eq(&first, &changed));
        // The lists do not keep a replaced catalogue (and its plugins) alive.
        let weak = Arc::downgrade(&catalogue);
        drop(catalogue);
        assert!(weak.upgrade().is_none());
        assert_eq!(changed.items(List::Resources).len(), 1);
        assert_eq!(changed.items(List::Prompts).len(), 2);
    }
}
