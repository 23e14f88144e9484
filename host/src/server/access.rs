//! Who may see and use what. The operator says what a plugin (and one
//! tool, resource or prompt of it) requires of a caller's token
//! ([`Policy`]); the transport says what the caller's token carries
//! ([`Caller`]). A caller sees in the lists only what it may use, and
//! using anything else is refused naming the scopes it needs (HTTP answers
//! 403 with an `insufficient_scope` challenge).

use crate::config::{ClaimValues, Config, ToolRule, UnnamedPlugins, TOOL_HINTS};
use crate::protocol::model::to_json;
use crate::protocol::{ErrorCode, RpcError};
use crate::runtime::tools;
use crate::skills::{Skill, SkillFile};
use crate::tenant::Tenant;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The scopes a token carries, at most; more are ignored.
const MAX_SCOPES: usize = 256;

/// Who makes a request, and what its token grants.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who it is, when the transport authenticated it.
    pub principal: Option<String>,
    grants: Grants,
    /// The named sets of tools it is confined to (that of the path it came
    /// on, that of its token's claim): it is served what all of them offer.
    profiles: Vec<Arc<Profile>>,
    /// Whose plugin data it reaches.
    pub tenant: Tenant,
}

#[derive(Debug, Clone)]
enum Grants {
    /// The operator's own client (stdio): everything.
    Everything,
    /// What a token carries (nothing, for an anonymous caller).
    Token {
        scopes: BTreeSet<String>,
        claims: Arc<Map<String, Value>>,
    },
}

impl Caller {
    /// The client that started the host (stdio): it may use everything.
    pub fn operator() -> Arc<Caller> {
        static OPERATOR: std::sync::LazyLock<Arc<Caller>> = std::sync::LazyLock::new(|| {
            Arc::new(Caller {
                principal: None,
                grants: Grants::Everything,
                profiles: Vec::new(),
                tenant: Tenant::local(),
            })
        });
        OPERATOR.clone()
    }

    /// A caller over the network with no token (none was required): it
    /// may use what requires nothing.
    pub fn anonymous() -> Arc<Caller> {
        static ANONYMOUS: std::sync::LazyLock<Arc<Caller>> =
            std::sync::LazyLock::new(|| Arc::new(Caller::with_token(None, Map::new())));
        ANONYMOUS.clone()
    }

    /// `principal`, whose token carries `claims`: its scopes are the
    /// `scope` claim (space-separated) or the `scp` claim (an array, or a
    /// string like `scope`).
    pub fn with_token(principal: Option<String>, claims: Map<String, Value>) -> Caller {
        let mut scopes = BTreeSet::new();
        for name in ["scope", "scp"] {
            match claims.get(name) {
                Some(Value::String(text)) => scopes.extend(text.split(' ').map(str::to_owned)),
                Some(Value::Array(items)) => {
                    scopes.extend(items.iter().filter_map(Value::as_str).map(str::to_owned))
                }
                _ => {}
            }
        }
        scopes.remove("");
        while scopes.len() > MAX_SCOPES {
            scopes.pop_last();
        }
        // Its own tenant by default: the token's subject, else whoever it
        // is, else (anonymous) the one local tenant.
        let tenant = match claims.get("sub") {
            Some(Value::String(sub)) => Tenant::new(sub),
            _ => principal.as_deref().and_then(Tenant::new),
        };
        Caller {
            principal,
            grants: Grants::Token {
                scopes,
                claims: Arc::new(claims),
            },
            profiles: Vec::new(),
            tenant: tenant.unwrap_or_else(Tenant::local),
        }
    }

    /// The caller, as a member of `tenant`.
    pub fn in_tenant(mut self, tenant: Tenant) -> Caller {
        self.tenant = tenant;
        self
    }

    /// The text of the token's `claim`, by its name, else as a dotted path
    /// into nested objects (as rules read claims).
    pub fn claim_at(&self, claim: &str) -> TextClaim<'_> {
        let claims = match &self.grants {
            Grants::Everything => return TextClaim::Absent,
            Grants::Token { claims, .. } => claims,
        };
        let found = claims.get(claim).or_else(|| {
            let mut parts = claim.split('.');
            let first = claims.get(parts.next()?)?;
            parts.try_fold(first, |at, part| at.get(part))
        });
        match found {
            None => TextClaim::Absent,
            Some(Value::String(text)) => TextClaim::Text(text),
            Some(_) => TextClaim::NotText,
        }
    }

    /// The caller, confined to `profile` as well as to any it already was
    /// (a path's profile never widens what a token's claim confines it to).
    pub fn in_profile(mut self, profile: Arc<Profile>) -> Caller {
        if !self.profiles.iter().any(|p| p.name == profile.name) {
            self.profiles.push(profile);
        }
        self
    }

    /// The names of the profiles it is confined to.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|p| p.name.as_str())
    }

    /// Claim `name` of its token, as text.
    pub fn text_claim(&self, name: &str) -> TextClaim<'_> {
        match &self.grants {
            Grants::Everything => TextClaim::Absent,
            Grants::Token { claims, .. } => match claims.get(name) {
                None => TextClaim::Absent,
                Some(Value::String(text)) => TextClaim::Text(text),
                Some(_) => TextClaim::NotText,
            },
        }
    }

    /// Its scopes and claims, as a task that may run again elsewhere keeps
    /// them ([`Caller::from_grants`]); `None` for the operator.
    pub fn grants(&self) -> Option<Value> {
        match &self.grants {
            Grants::Everything => None,
            Grants::Token { claims, .. } => Some(to_json(&KeptGrants {
                claims,
                profiles: self.profile_names().collect(),
                tenant: self.tenant.name(),
            })),
        }
    }

    /// The caller [`Caller::grants`] described, its profiles looked up in
    /// `policy` (a name no longer configured offers nothing); the operator
    /// for `None`.
    pub fn from_grants(
        principal: Option<String>,
        grants: Option<&Value>,
        policy: &Policy,
    ) -> Caller {
        let Some(grants) = grants else {
            return Caller {
                principal,
                ..(*Caller::operator()).clone()
            };
        };
        let claims = grants
            .get("claims")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut caller = Caller::with_token(principal, claims);
        if let Some(tenant) = grants
            .get("tenant")
            .and_then(Value::as_str)
            .and_then(Tenant::new)
        {
            caller.tenant = tenant;
        }
        let names = grants.get("profiles").and_then(Value::as_array);
        for name in names.into_iter().flatten().filter_map(Value::as_str) {
            let profile = policy
                .profile(name)
                .unwrap_or_else(|| Arc::new(Profile::empty(name)));
            caller = caller.in_profile(profile);
        }
        caller
    }

    fn has_scope(&self, scope: &str) -> bool {
        match &self.grants {
            Grants::Everything => true,
            Grants::Token { scopes, .. } => scopes.contains(scope),
        }
    }

    /// Whether the token's `claim` (by its name, else as a dotted path
    /// into nested objects) is one of `values`, or an array holding one.
    fn has_claim(&self, claim: &str, values: &[String]) -> bool {
        let claims = match &self.grants {
            Grants::Everything => return true,
            Grants::Token { claims, .. } => claims,
        };
        let found = claims.get(claim).or_else(|| {
            let mut parts = claim.split('.');
            let first = claims.get(parts.next()?)?;
            parts.try_fold(first, |at, part| at.get(part))
        });
        let matches = |v: &Value| v.as_str().is_some_and(|v| values.iter().any(|w| w == v));
        match found {
            Some(Value::Array(items)) => items.iter().any(matches),
            Some(other) => matches(other),
            None => false,
        }
    }
}

/// A token's claim read as text ([`Caller::text_claim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextClaim<'a> {
    /// The token has no such claim.
    Absent,
    /// Its value.
    Text(&'a str),
    /// It is there, but not a string.
    NotText,
}

/// A `*` pattern over `PLUGIN.NAME` (matched as `config check` matches
/// it: [`crate::config::unmatched::glob_matches`], linear in the text).
#[derive(Debug)]
struct Glob(String);

impl Glob {
    fn new(pattern: &str) -> Self {
        Glob(pattern.to_owned())
    }

    fn matches(&self, text: &str) -> bool {
        crate::config::unmatched::glob_matches(&self.0, text)
    }
}

/// A named set of tools, resources and prompts (`[profiles.NAME]`).
#[derive(Debug)]
pub struct Profile {
    /// Its name.
    pub name: String,
    include: Vec<Glob>,
    exclude: Vec<Glob>,
}

impl Profile {
    /// The profile `name` as `section` describes it.
    pub fn new(name: &str, section: &crate::config::ProfileSection) -> Self {
        Profile {
            name: name.to_owned(),
            include: section.include.iter().map(|p| Glob::new(p)).collect(),
            exclude: section.exclude.iter().map(|p| Glob::new(p)).collect(),
        }
    }

    /// A profile that offers nothing (for a token naming no profile
    /// configured).
    pub fn empty(name: &str) -> Self {
        Profile {
            name: name.to_owned(),
            include: Vec::new(),
            exclude: vec![Glob::new("*")],
        }
    }

    /// Whether it offers item `name` of `plugin`.
    pub fn includes(&self, plugin: &str, name: &str) -> bool {
        let full = format!("{plugin}.{name}");
        (self.include.is_empty() || self.include.iter().any(|g| g.matches(&full)))
            && !self.exclude.iter().any(|g| g.matches(&full))
    }
}

/// What a caller's token must carry: all of `scopes`, and for each claim
/// one of its values; or, for what no rule may reach, nothing it can carry.
#[derive(Debug, Clone, Default, PartialEq)]
struct Requirement {
    scopes: BTreeSet<String>,
    claims: BTreeMap<String, Vec<String>>,
    /// Served to no caller with a token or none (the operator aside).
    never: bool,
}

impl Requirement {
    fn add(&mut self, scopes: &[String], claims: &BTreeMap<String, ClaimValues>) {
        self.scopes.extend(scopes.iter().cloned());
        for (claim, values) in claims {
            // Both must hold: a claim required twice takes the values both allow.
            let values = values.values().to_vec();
            match self.claims.get_mut(claim) {
                Some(before) => before.retain(|v| values.contains(v)),
                None => {
                    self.claims.insert(claim.clone(), values);
                }
            }
        }
    }

    fn met_by(&self, caller: &Caller) -> bool {
        if matches!(caller.grants, Grants::Everything) {
            return true;
        }
        !self.never
            && self.scopes.iter().all(|s| caller.has_scope(s))
            && self
                .claims
                .iter()
                .all(|(claim, values)| caller.has_claim(claim, values))
    }
}

/// The kind of item a rule is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A tool, by its plugin's name for it.
    Tool,
    /// A prompt, by its plugin's name for it.
    Prompt,
    /// A resource by URI, or a template by URI template.
    Resource,
}

/// What a request reaches: one tool, prompt, resource, template or skill
/// of one plugin. Every path that reaches an item (lists, reads,
/// subscriptions, completions, calls, tool search, tasks run again) asks
/// about it here: [`Policy::check`], or for lists [`Policy::rule`] then
/// [`View::sees`].
#[derive(Clone, Copy)]
pub struct Item<'a> {
    plugin: &'a str,
    kind: Kind,
    /// The plugin's own name for a tool or prompt; a resource's URI or a
    /// template's URI template; a skill's `SKILL.md` URI.
    name: &'a str,
    /// A tool's annotation hints, in the order of [`TOOL_HINTS`].
    hints: [Option<bool>; 4],
    /// A skill's files: a rule on any of them covers the whole skill.
    files: &'a [Arc<SkillFile>],
}

impl<'a> Item<'a> {
    /// Tool `tool` of `plugin` (its own description of it).
    pub fn tool(plugin: &'a str, tool: &'a tools::Tool) -> Self {
        let a = tool.annotations.as_ref();
        Item {
            plugin,
            kind: Kind::Tool,
            name: &tool.name,
            hints: [
                a.and_then(|a| a.read_only_hint),
                a.and_then(|a| a.destructive_hint),
                a.and_then(|a| a.idempotent_hint),
                a.and_then(|a| a.open_world_hint),
            ],
            files: &[],
        }
    }

    /// Prompt `name` (the plugin's own name) of `plugin`.
    pub fn prompt(plugin: &'a str, name: &'a str) -> Self {
        Item {
            plugin,
            kind: Kind::Prompt,
            name,
            hints: [None; 4],
            files: &[],
        }
    }

    /// The resource at `uri`, or the template `uri` (its URI template), of
    /// `plugin`.
    pub fn resource(plugin: &'a str, uri: &'a str) -> Self {
        Item {
            plugin,
            kind: Kind::Resource,
            name: uri,
            hints: [None; 4],
            files: &[],
        }
    }

    /// `skill` of `plugin`, whichever of its files is reached.
    pub fn skill(plugin: &'a str, skill: &'a Skill) -> Self {
        Item {
            plugin,
            kind: Kind::Resource,
            name: &skill.uri,
            hints: [None; 4],
            files: &skill.files,
        }
    }

    /// Its plugin.
    pub fn plugin(&self) -> &'a str {
        self.plugin
    }

    /// Its name in its plugin (a URI for a resource or skill).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether a tool with its hints is selected by `rule`'s annotations.
    fn selected_by(&self, rule: &ToolRule) -> bool {
        let hint = |name: &str| {
            let at = TOOL_HINTS.iter().position(|(h, _)| *h == name);
            at.map(|i| self.hints[i].unwrap_or(TOOL_HINTS[i].1))
        };
        rule.annotated.iter().all(|(h, v)| hint(h) == Some(*v))
            && rule
                .unless_annotated
                .iter()
                .all(|(h, v)| hint(h) != Some(*v))
    }
}

/// The requirements (indexes into [`Policy`]'s) an item's caller must meet,
/// all of them; none: anyone may use it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule(Box<[u32]>);

impl Rule {
    /// Whether anyone may use it.
    pub fn is_open(&self) -> bool {
        self.0.is_empty()
    }
}

/// The rules of one plugin: the requirement of anything of it, of the
/// items with their own, and of the tools selected by annotations
/// (indexes into [`Policy::requirements`]).
#[derive(Debug, Default)]
struct PluginRules {
    all: Option<usize>,
    items: HashMap<(Kind, String), usize>,
    tools: Vec<(ToolRule, usize)>,
}

/// What the operator requires of callers, per plugin and item.
#[derive(Debug, Default)]
pub struct Policy {
    requirements: Vec<Requirement>,
    plugins: HashMap<String, PluginRules>,
    /// Every plugin a `[plugins.NAME]` section names.
    sections: BTreeSet<String>,
    /// The requirement of a plugin no section names, once any rule exists
    /// (`[access] unnamed_plugins = "deny"`).
    unnamed: Option<usize>,
    profiles: BTreeMap<String, Arc<Profile>>,
}

/// Which of a policy's requirements one caller meets, and the profiles it
/// is confined to: callers with the same view see the same lists.
#[derive(Debug, Clone)]
pub struct View {
    met: Vec<bool>,
    profiles: Vec<Arc<Profile>>,
}

impl PartialEq for View {
    fn eq(&self, other: &Self) -> bool {
        self.met == other.met
            && self
                .profiles
                .iter()
                .map(|p| &p.name)
                .eq(other.profiles.iter().map(|p| &p.name))
    }
}

impl Eq for View {}

impl std::hash::Hash for View {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.met.hash(state);
        for profile in &self.profiles {
            profile.name.hash(state);
        }
    }
}

/// Why a caller was refused an item, as the audit log and the host's log
/// say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Outside a profile the caller is confined to.
    Profile,
    /// Its token lacks a scope.
    Scope,
    /// Its token lacks a claim value.
    Claim,
    /// No section names the plugin, and unnamed plugins are denied.
    Unnamed,
}

impl Refused {
    /// The word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::Profile => "profile",
            Refused::Scope => "missing_scope",
            Refused::Claim => "missing_claim_value",
            Refused::Unnamed => "unnamed_plugin",
        }
    }
}

impl Policy {
    /// The requirements `config` sets (none: everyone may use everything).
    pub fn of(config: &Config) -> Self {
        let mut policy = Policy::default();
        for (name, section) in &config.profiles {
            let profile = Arc::new(Profile::new(name, section));
            policy.profiles.insert(name.clone(), profile);
        }
        for (plugin, section) in &config.plugins {
            policy.sections.insert(plugin.clone());
            let mut base = Requirement::default();
            base.add(&section.scopes, &section.claims);
            let mut rules = PluginRules::default();
            if base != Requirement::default() {
                rules.all = Some(policy.index(base.clone()));
            }
            for (kind, items) in [
                (Kind::Tool, &section.tools),
                (Kind::Prompt, &section.prompts),
                (Kind::Resource, &section.resources),
            ] {
                for (name, item) in items {
                    if item.scopes.is_empty() && item.claims.is_empty() {
                        continue;
                    }
                    let mut requirement = base.clone();
                    requirement.add(&item.scopes, &item.claims);
                    let index = policy.index(requirement);
                    rules.items.insert((kind, name.clone()), index);
                }
            }
            for rule in &section.tool_rules {
                let mut requirement = Requirement::default();
                requirement.add(&rule.scopes, &rule.claims);
                let index = policy.index(requirement);
                rules.tools.push((rule.clone(), index));
            }
            if rules.all.is_some() || !rules.items.is_empty() || !rules.tools.is_empty() {
                policy.plugins.insert(plugin.clone(), rules);
            }
        }
        if !policy.requirements.is_empty() && config.access.unnamed_plugins == UnnamedPlugins::Deny
        {
            let never = Requirement {
                never: true,
                ..Requirement::default()
            };
            policy.unnamed = Some(policy.index(never));
        }
        policy
    }

    fn index(&mut self, requirement: Requirement) -> usize {
        match self.requirements.iter().position(|r| *r == requirement) {
            Some(i) => i,
            None => {
                self.requirements.push(requirement);
                self.requirements.len() - 1
            }
        }
    }

    /// Whether every caller sees everything (no requirements and no
    /// profiles).
    pub fn is_open(&self) -> bool {
        self.requirements.is_empty() && self.profiles.is_empty()
    }

    /// The profile named `name`, if configured.
    pub fn profile(&self, name: &str) -> Option<Arc<Profile>> {
        self.profiles.get(name).cloned()
    }

    /// What `item` requires of a caller.
    pub fn rule(&self, item: &Item<'_>) -> Rule {
        let Some(rules) = self.plugins.get(item.plugin) else {
            return match self.unnamed {
                Some(never) if !self.sections.contains(item.plugin) => {
                    Rule(Box::new([never as u32]))
                }
                _ => Rule::default(),
            };
        };
        let mut indexes: Vec<u32> = Vec::new();
        let mut add = |i: usize| {
            if !indexes.contains(&(i as u32)) {
                indexes.push(i as u32);
            }
        };
        let own = |name: &str| rules.items.get(&(item.kind, name.to_owned())).copied();
        if let Some(i) = own(item.name).or(rules.all) {
            add(i);
        }
        // A rule on any file of a skill covers the whole skill.
        for file in item.files {
            if let Some(i) = own(&file.uri) {
                add(i);
            }
        }
        if item.kind == Kind::Tool {
            for (rule, i) in &rules.tools {
                if item.selected_by(rule) {
                    add(*i);
                }
            }
        }
        Rule(indexes.into_boxed_slice())
    }

    /// What `caller` may see; `None` when it sees everything.
    pub fn view(&self, caller: &Caller) -> Option<View> {
        let everything =
            self.requirements.is_empty() || matches!(caller.grants, Grants::Everything);
        if everything && caller.profiles.is_empty() {
            return None;
        }
        Some(View {
            met: self.requirements.iter().map(|r| r.met_by(caller)).collect(),
            profiles: caller.profiles.clone(),
        })
    }

    /// Refuses `caller` the use of `item` unless it meets what that
    /// requires (`what` names the item in the message). The one decision
    /// for every path that reaches an item.
    pub fn check(&self, caller: &Caller, item: &Item<'_>, what: &str) -> Result<(), RpcError> {
        self.decide(caller, item)
            .map_err(|(why, scopes)| self.refusal(caller, why, &scopes, what))
    }

    /// Why `caller` may not use `item`, and every scope it requires.
    fn decide(&self, caller: &Caller, item: &Item<'_>) -> Result<(), (Refused, Vec<String>)> {
        if let Some(profile) = caller
            .profiles
            .iter()
            .find(|p| !p.includes(item.plugin, item.name))
        {
            return Err((Refused::Profile, vec![profile.name.clone()]));
        }
        let rule = self.rule(item);
        let unmet: Vec<&Requirement> = rule
            .0
            .iter()
            .map(|&i| &self.requirements[i as usize])
            .filter(|r| !r.met_by(caller))
            .collect();
        if unmet.is_empty() {
            return Ok(());
        }
        if unmet.iter().any(|r| r.never) {
            return Err((Refused::Unnamed, Vec::new()));
        }
        let scopes: BTreeSet<String> = rule
            .0
            .iter()
            .flat_map(|&i| self.requirements[i as usize].scopes.iter().cloned())
            .collect();
        let missing_scope = unmet
            .iter()
            .any(|r| r.scopes.iter().any(|s| !caller.has_scope(s)));
        let why = if missing_scope {
            Refused::Scope
        } else {
            Refused::Claim
        };
        Err((why, scopes.into_iter().collect()))
    }

    fn refusal(&self, caller: &Caller, why: Refused, scopes: &[String], what: &str) -> RpcError {
        let reason = why.as_str();
        match why {
            Refused::Profile => RpcError::invalid_params(format!(
                "{what} is not offered here (profile {})",
                scopes.join(" ")
            ))
            .with_data(to_json(&RefusalData {
                scope: None,
                reason,
            })),
            Refused::Unnamed => RpcError::new(
                ErrorCode::Forbidden,
                format!(
                    "Forbidden: {what} is served to no caller here (no [plugins] section names \
                     its plugin, and [access] unnamed_plugins is \"deny\")"
                ),
            )
            .with_data(to_json(&RefusalData {
                scope: None,
                reason,
            })),
            Refused::Scope | Refused::Claim => {
                let missing: Vec<&str> = scopes
                    .iter()
                    .map(String::as_str)
                    .filter(|s| !caller.has_scope(s))
                    .collect();
                let message = if missing.is_empty() {
                    format!("Forbidden: {what} requires claims this caller's token does not carry")
                } else {
                    format!(
                        "Forbidden: {what} requires the scope{} {}",
                        if missing.len() == 1 { "" } else { "s" },
                        missing.join(" ")
                    )
                };
                RpcError::new(ErrorCode::Forbidden, message).with_data(to_json(&RefusalData {
                    scope: Some(scopes.join(" ")),
                    reason,
                }))
            }
        }
    }
}

impl View {
    /// Whether `item`, under `rule` ([`Policy::rule`]), is seen.
    pub fn sees(&self, rule: &Rule, item: &Item<'_>) -> bool {
        self.sees_named(rule, Some((item.plugin, item.name)))
    }

    /// Whether an item under `rule`, of plugin and name `id` (`None`: a
    /// host tool, in every profile), is seen.
    pub fn sees_named(&self, rule: &Rule, id: Option<(&str, &str)>) -> bool {
        rule.0
            .iter()
            .all(|&i| self.met.get(i as usize).copied().unwrap_or(false))
            && id
                .is_none_or(|(plugin, name)| self.profiles.iter().all(|p| p.includes(plugin, name)))
    }
}

/// A caller's grants as a task that may run again keeps them
/// ([`Caller::grants`]).
#[derive(Serialize)]
struct KeptGrants<'a> {
    /// The token's claims.
    claims: &'a Map<String, Value>,
    /// The profiles it was served in.
    profiles: Vec<&'a str>,
    /// Its tenant's name.
    tenant: &'a str,
}

/// The data of an access refusal: why, and the scopes the item needs.
#[derive(Serialize)]
struct RefusalData<'a> {
    /// The scopes the item needs, where scopes decide.
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    /// Why (`profile`, `unnamed_plugin`, `scope`, `claim`).
    reason: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy_of(toml: &str) -> Policy {
        Policy::of(&Config::parse(toml, std::path::Path::new(".")).unwrap())
    }

    fn token(claims: Value) -> Caller {
        Caller::with_token(Some("p".into()), claims.as_object().unwrap().clone())
    }

    fn tool(name: &str, read_only: Option<bool>) -> tools::Tool {
        tools::Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema: "{}".into(),
            output_schema: None,
            annotations: read_only.map(|r| tools::ToolAnnotations {
                title: None,
                read_only_hint: Some(r),
                destructive_hint: None,
                idempotent_hint: None,
                open_world_hint: None,
            }),
            task_support: tools::TaskSupport::Forbidden,
            icons: Vec::new(),
            meta: None,
        }
    }

    fn item<'a>(plugin: &'a str, kind: Kind, name: &'a str) -> Item<'a> {
        Item {
            plugin,
            kind,
            name,
            hints: [None; 4],
            files: &[],
        }
    }

    #[test]
    fn plugins_and_items_require_scopes_and_claims() {
        let policy = policy_of(
            r#"
            [plugins.files]
            scopes = ["files:read"]
            [plugins.files.tools.write]
            scopes = ["files:write"]
            [plugins.admin]
            claims = { "realm_access.roles" = ["admin", "ops"] }
            [plugins.open.tools.t]
            calls_per_sec = 3
            "#,
        );
        assert!(!policy.is_open());
        let reader = token(json!({ "scope": "files:read other" }));
        let writer = token(json!({ "scp": ["files:read", "files:write"] }));
        let admin = token(json!({ "realm_access": { "roles": ["ops"] } }));
        let nobody = Caller::with_token(None, Map::new());
        let check = |caller: &Caller, plugin, kind, name| {
            policy
                .check(caller, &item(plugin, kind, name), "it")
                .is_ok()
        };
        assert!(check(&reader, "files", Kind::Tool, "read"));
        assert!(!check(&reader, "files", Kind::Tool, "write"));
        assert!(check(&writer, "files", Kind::Tool, "write"));
        assert!(!check(&nobody, "files", Kind::Prompt, "p"));
        assert!(check(&admin, "admin", Kind::Resource, "x://y"));
        assert!(!check(&reader, "admin", Kind::Resource, "x://y"));
        assert!(check(&nobody, "open", Kind::Tool, "t"));
        assert!(check(&Caller::operator(), "files", Kind::Tool, "write"));

        let refused = policy
            .check(&reader, &item("files", Kind::Tool, "write"), "tool write")
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        let data = refused.data.unwrap();
        assert_eq!(data["scope"], "files:read files:write");
        assert_eq!(data["reason"], "missing_scope");
        assert!(refused.message.contains("files:write"));

        // Views: equal for callers meeting the same requirements.
        let view = |c: &Caller| policy.view(c).unwrap();
        assert_eq!(
            view(&reader),
            view(&token(json!({ "scope": "files:read" })))
        );
        assert_ne!(view(&reader), view(&writer));
        let write = item("files", Kind::Tool, "write");
        let rule = policy.rule(&write);
        assert!(view(&writer).sees(&rule, &write));
        assert!(!view(&reader).sees(&rule, &write));
        assert!(policy.view(&Caller::operator()).is_none());
        assert!(policy_of(
            r#"[plugins.x.tools.t]
            calls_per_sec = 1"#
        )
        .is_open());
    }

    #[test]
    fn a_plugin_no_section_names_is_denied_once_any_rule_exists() {
        let guarded = r#"
            [plugins.filesystem]
            scopes = ["files:read"]
            [plugins.named]
            roots = []
        "#;
        let policy = policy_of(guarded);
        let reader = token(json!({ "scope": "files:read" }));
        // A typo'd section leaves the real plugin unnamed: denied.
        let refused = policy
            .check(&reader, &item("filesytem", Kind::Tool, "read"), "tool read")
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert_eq!(refused.data.unwrap()["reason"], "unnamed_plugin");
        let view = policy.view(&reader).unwrap();
        let unnamed = item("filesytem", Kind::Tool, "read");
        assert!(!view.sees(&policy.rule(&unnamed), &unnamed));
        // A plugin a section names, with no rule of its own, stays open.
        assert!(policy
            .check(&reader, &item("named", Kind::Tool, "t"), "t")
            .is_ok());
        // The operator still sees everything.
        assert!(policy.check(&Caller::operator(), &unnamed, "t").is_ok());
        // Opened on purpose.
        let open = policy_of(&format!("{guarded}\n[access]\nunnamed_plugins = \"open\""));
        assert!(open.check(&reader, &unnamed, "t").is_ok());
        // No rule anywhere: nothing is denied.
        let none = policy_of("[plugins.named]\nroots = []");
        assert!(none.is_open());
        assert!(none.check(&reader, &unnamed, "t").is_ok());
    }

    #[test]
    fn tool_rules_select_by_annotations_whatever_the_plugin_adds() {
        let policy = policy_of(
            r#"
            [plugins.fs]
            scopes = ["files:read"]
            [[plugins.fs.tool_rules]]
            unless_annotated = { readOnlyHint = true }
            scopes = ["files:write"]
            [[plugins.fs.tool_rules]]
            annotated = { destructiveHint = true, readOnlyHint = false }
            claims = { role = "admin" }
            "#,
        );
        let reader = token(json!({ "scope": "files:read" }));
        let writer = token(json!({ "scope": "files:read files:write" }));
        let admin = token(json!({ "scope": "files:read files:write", "role": "admin" }));
        let read = tool("read_file", Some(true));
        let unannotated = tool("edit_file", None);
        let not_destructive = tools::Tool {
            annotations: Some(tools::ToolAnnotations {
                title: None,
                read_only_hint: Some(false),
                destructive_hint: Some(false),
                idempotent_hint: None,
                open_world_hint: None,
            }),
            ..tool("create_directory", None)
        };
        let ok = |c: &Caller, t: &tools::Tool| policy.check(c, &Item::tool("fs", t), "t").is_ok();
        assert!(ok(&reader, &read));
        // No annotation: not read-only, and destructive by the protocol's default.
        assert!(!ok(&reader, &unannotated));
        assert!(!ok(&writer, &unannotated));
        assert!(ok(&admin, &unannotated));
        assert!(!ok(&reader, &not_destructive));
        assert!(ok(&writer, &not_destructive));
        let view = policy.view(&writer).unwrap();
        let item = Item::tool("fs", &unannotated);
        assert!(!view.sees(&policy.rule(&item), &item));
        let item = Item::tool("fs", &not_destructive);
        assert!(view.sees(&policy.rule(&item), &item));
        // A hint that is not one is a problem of the config, not a rule
        // that matches nothing.
        let typo =
            "[[plugins.fs.tool_rules]]\nannotated = { destructveHint = true }\nscopes = [\"x\"]";
        assert!(Config::parse(typo, std::path::Path::new(".")).is_err());
    }

    #[test]
    fn a_rule_on_any_file_of_a_skill_covers_the_whole_skill() {
        let policy = policy_of(
            r#"
            [plugins.docs]
            [plugins.docs.resources."skill://docs/deploy/SKILL.md"]
            scopes = ["ops"]
            "#,
        );
        let file = |path: &str| {
            Arc::new(SkillFile {
                path: path.into(),
                uri: format!("skill://docs/deploy/{path}"),
                bytes: Arc::from(&b"x"[..]),
                digest: String::new(),
                mime: "text/markdown",
            })
        };
        let skill = Skill {
            name: "deploy".into(),
            uri: "skill://docs/deploy/SKILL.md".into(),
            root: "skill://docs/deploy".into(),
            frontmatter: Map::new(),
            files: vec![file("SKILL.md"), file("references/runbook.md")],
        };
        let nobody = Caller::with_token(None, Map::new());
        let ops = token(json!({ "scope": "ops" }));
        let item = Item::skill("docs", &skill);
        assert!(policy.check(&nobody, &item, "skill").is_err());
        assert!(policy.check(&ops, &item, "skill").is_ok());
        // The rule may name any of its files.
        let policy = policy_of(
            r#"
            [plugins.docs.resources."skill://docs/deploy/references/runbook.md"]
            scopes = ["ops"]
            "#,
        );
        assert!(policy.check(&nobody, &item, "skill").is_err());
    }

    #[test]
    fn profiles_include_then_exclude_by_pattern() {
        let policy = policy_of(
            r#"
            [profiles.files]
            include = ["filesystem.*", "time.now"]
            exclude = ["filesystem.write*"]
            [profiles.all]
            "#,
        );
        let files = policy.profile("files").unwrap();
        assert!(files.includes("filesystem", "read_file"));
        assert!(!files.includes("filesystem", "write_file"));
        assert!(files.includes("time", "now") && !files.includes("time", "nowhere"));
        assert!(!files.includes("hello", "greet"));
        assert!(policy.profile("all").unwrap().includes("hello", "greet"));
        assert!(!Profile::empty("x").includes("hello", "greet"));
        let caller = Caller::with_token(None, Map::new()).in_profile(files.clone());
        let refused = policy.check(&caller, &item("hello", Kind::Tool, "greet"), "tool greet");
        assert_eq!(refused.unwrap_err().code, ErrorCode::InvalidParams);
        assert!(policy
            .check(&caller, &item("filesystem", Kind::Tool, "read_file"), "t")
            .is_ok());
        let view = policy.view(&caller).unwrap();
        let open = Rule::default();
        assert!(view.sees(&open, &item("filesystem", Kind::Tool, "read_file")));
        assert!(!view.sees(&open, &item("hello", Kind::Tool, "greet")));
        // A path's profile never widens the one a token's claim names.
        let both = caller.clone().in_profile(policy.profile("all").unwrap());
        assert!(policy
            .check(&both, &item("hello", Kind::Tool, "greet"), "t")
            .is_err());
        let time_only = Arc::new(Profile::new(
            "time",
            &crate::config::ProfileSection {
                include: vec!["time.*".into()],
                ..Default::default()
            },
        ));
        let narrowed = caller.in_profile(time_only);
        assert!(policy
            .check(&narrowed, &item("filesystem", Kind::Tool, "read_file"), "t")
            .is_err());
        assert!(policy
            .check(&narrowed, &item("time", Kind::Tool, "now"), "t")
            .is_ok());
        assert!(Glob::new("a*b*c").matches("a-b-c") && !Glob::new("a*b*c").matches("ac"));
        assert!(Glob::new("*").matches("") && Glob::new("ab*").matches("ab"));
        // Names are the plugins' own: any text, never a panic.
        assert!(!Glob::new("x*é").matches("xab€"));
        assert!(!Glob::new("€*x").matches("€"));
        assert!(Glob::new("p.*é").matches("p.café"));
        assert!(!Glob::new("aa*aa").matches("aaa"));
    }

    #[test]
    fn grants_kept_for_a_task_decide_as_the_token_did() {
        let policy = policy_of(
            r#"
            [plugins.files]
            scopes = ["files:read"]
            [profiles.files]
            include = ["files.*"]
            "#,
        );
        let reader =
            token(json!({ "scope": "files:read" })).in_profile(policy.profile("files").unwrap());
        let kept = reader.grants();
        let again = Caller::from_grants(Some("p".into()), kept.as_ref(), &policy);
        let read = item("files", Kind::Tool, "read");
        assert!(policy.check(&again, &read, "t").is_ok());
        let nobody = Caller::from_grants(Some("p".into()), Some(&json!({})), &policy);
        assert!(policy.check(&nobody, &read, "t").is_err());
        assert!(Caller::operator().grants().is_none());
        assert_eq!(again.profile_names().collect::<Vec<_>>(), ["files"]);
    }

    #[test]
    fn a_claim_named_with_dots_is_read_whole_first() {
        let caller = token(json!({ "https://example.com/groups": ["eng"] }));
        assert!(caller.has_claim("https://example.com/groups", &["eng".into()]));
        assert!(!caller.has_claim("https://example.com/groups", &["ops".into()]));
        assert!(!caller.has_claim("missing.path", &["eng".into()]));
        let odd = token(json!({ "profile": ["a"] }));
        assert_eq!(odd.text_claim("profile"), TextClaim::NotText);
        assert_eq!(odd.text_claim("other"), TextClaim::Absent);
    }
}
