//! Who may see and use what. The operator says what a plugin (and one
//! tool, resource or prompt of it) requires of a caller's token
//! ([`Policy`]); the transport says what the caller's token carries
//! ([`Caller`]). A caller sees in the lists only what it may use, and
//! using anything else is refused naming the scopes it needs (HTTP answers
//! 403 with an `insufficient_scope` challenge).

use crate::config::{ClaimValues, Config};
use crate::protocol::{ErrorCode, RpcError};
use serde_json::{json, Map, Value};
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
    /// The named set of tools it is served, if any.
    profile: Option<Arc<Profile>>,
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
                profile: None,
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
        Caller {
            principal,
            grants: Grants::Token {
                scopes,
                claims: Arc::new(claims),
            },
            profile: None,
        }
    }

    /// The caller, served `profile`.
    pub fn in_profile(mut self, profile: Arc<Profile>) -> Caller {
        self.profile = Some(profile);
        self
    }

    /// The string value of claim `name` of its token, if it has one.
    pub fn claim(&self, name: &str) -> Option<&str> {
        match &self.grants {
            Grants::Everything => None,
            Grants::Token { claims, .. } => claims.get(name).and_then(Value::as_str),
        }
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

/// A `*` pattern over `PLUGIN.NAME`.
#[derive(Debug)]
struct Glob(Vec<String>);

impl Glob {
    fn new(pattern: &str) -> Self {
        Glob(pattern.split('*').map(str::to_owned).collect())
    }

    /// Whether `text` matches: the parts in order, the first at the start
    /// and the last at the end (linear in `text`).
    fn matches(&self, text: &str) -> bool {
        let parts = &self.0;
        let (first, last) = (&parts[0], &parts[parts.len() - 1]);
        if parts.len() == 1 {
            return text == first;
        }
        // Both ends checked before slicing: the cuts then fall on
        // character boundaries, and the two ends do not overlap.
        if text.len() < first.len() + last.len()
            || !text.starts_with(first.as_str())
            || !text.ends_with(last.as_str())
        {
            return false;
        }
        let mut rest = &text[first.len()..text.len() - last.len()];
        for part in &parts[1..parts.len() - 1] {
            match rest.find(part.as_str()) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        true
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
/// one of its values.
#[derive(Debug, Clone, Default, PartialEq)]
struct Requirement {
    scopes: BTreeSet<String>,
    claims: BTreeMap<String, Vec<String>>,
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
        self.scopes.iter().all(|s| caller.has_scope(s))
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

/// The rules of one plugin: the requirement of anything of it, and of the
/// items with their own (indexes into [`Policy::requirements`]).
#[derive(Debug, Default)]
struct PluginRules {
    all: Option<usize>,
    items: HashMap<(Kind, String), usize>,
}

/// What the operator requires of callers, per plugin and item.
#[derive(Debug, Default)]
pub struct Policy {
    requirements: Vec<Requirement>,
    plugins: HashMap<String, PluginRules>,
    profiles: BTreeMap<String, Arc<Profile>>,
    /// Every item the config names, by plugin (to say which a plugin does
    /// not offer).
    named: BTreeMap<String, Vec<(Kind, String)>>,
}

/// Which of a policy's requirements one caller meets, and the profile it
/// is served: callers with the same view see the same lists.
#[derive(Debug, Clone)]
pub struct View {
    met: Vec<bool>,
    profile: Option<Arc<Profile>>,
}

impl PartialEq for View {
    fn eq(&self, other: &Self) -> bool {
        self.met == other.met
            && self.profile.as_ref().map(|p| &p.name) == other.profile.as_ref().map(|p| &p.name)
    }
}

impl Eq for View {}

impl std::hash::Hash for View {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.met.hash(state);
        self.profile.as_ref().map(|p| &p.name).hash(state);
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
                    let named = policy.named.entry(plugin.clone()).or_default();
                    named.push((kind, name.clone()));
                    if item.scopes.is_empty() && item.claims.is_empty() {
                        continue;
                    }
                    let mut requirement = base.clone();
                    requirement.add(&item.scopes, &item.claims);
                    let index = policy.index(requirement);
                    rules.items.insert((kind, name.clone()), index);
                }
            }
            if rules.all.is_some() || !rules.items.is_empty() {
                policy.plugins.insert(plugin.clone(), rules);
            }
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

    /// The items the config names for `plugin` that it does not offer
    /// (`offers` says whether it offers one), as `kind.name` texts: a typo
    /// there would otherwise go unnoticed.
    pub fn unknown_items(&self, plugin: &str, offers: impl Fn(Kind, &str) -> bool) -> Vec<String> {
        let kind_name = |kind| match kind {
            Kind::Tool => "tools",
            Kind::Prompt => "prompts",
            Kind::Resource => "resources",
        };
        self.named
            .get(plugin)
            .into_iter()
            .flatten()
            .filter(|(kind, name)| !offers(*kind, name))
            .map(|(kind, name)| format!("{}.{name:?}", kind_name(*kind)))
            .collect()
    }

    /// The profile named `name`, if configured.
    pub fn profile(&self, name: &str) -> Option<Arc<Profile>> {
        self.profiles.get(name).cloned()
    }

    /// The rule (requirement index) of item `name` of `kind` of `plugin`;
    /// `None`: anyone may use it.
    pub fn rule(&self, plugin: &str, kind: Kind, name: &str) -> Option<usize> {
        let rules = self.plugins.get(plugin)?;
        rules
            .items
            .get(&(kind, name.to_owned()))
            .copied()
            .or(rules.all)
    }

    /// What `caller` may see; `None` when it sees everything.
    pub fn view(&self, caller: &Caller) -> Option<View> {
        let everything =
            self.requirements.is_empty() || matches!(caller.grants, Grants::Everything);
        if everything && caller.profile.is_none() {
            return None;
        }
        Some(View {
            met: self.requirements.iter().map(|r| r.met_by(caller)).collect(),
            profile: caller.profile.clone(),
        })
    }

    /// Refuses `caller` the use of item `name` of `kind` of `plugin`
    /// unless it meets what that requires (`what` names the item in the
    /// message).
    pub fn check(
        &self,
        caller: &Caller,
        plugin: &str,
        kind: Kind,
        name: &str,
        what: &str,
    ) -> Result<(), RpcError> {
        if let Some(profile) = &caller.profile {
            if !profile.includes(plugin, name) {
                return Err(RpcError::invalid_params(format!(
                    "{what} is not offered here (profile {})",
                    profile.name
                )));
            }
        }
        let Some(rule) = self.rule(plugin, kind, name) else {
            return Ok(());
        };
        let requirement = &self.requirements[rule];
        if requirement.met_by(caller) {
            return Ok(());
        }
        let scopes: Vec<&str> = requirement.scopes.iter().map(String::as_str).collect();
        let missing: Vec<&str> = scopes
            .iter()
            .copied()
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
        Err(
            RpcError::new(ErrorCode::Forbidden, message).with_data(json!({
                "scope": scopes.join(" "),
            })),
        )
    }
}

impl View {
    /// Whether item `name` of `plugin`, under `rule`, is seen.
    pub fn sees(&self, rule: Option<usize>, plugin: &str, name: &str) -> bool {
        rule.is_none_or(|i| self.met.get(i).copied().unwrap_or(true))
            && self
                .profile
                .as_ref()
                .is_none_or(|profile| profile.includes(plugin, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_of(toml: &str) -> Policy {
        Policy::of(&Config::parse(toml, std::path::Path::new(".")).unwrap())
    }

    fn token(claims: Value) -> Caller {
        Caller::with_token(Some("p".into()), claims.as_object().unwrap().clone())
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
            policy.check(caller, plugin, kind, name, "it").is_ok()
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
            .check(&reader, "files", Kind::Tool, "write", "tool write")
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert_eq!(refused.data.unwrap()["scope"], "files:read files:write");
        assert!(refused.message.contains("files:write"));

        // Views: equal for callers meeting the same requirements.
        let view = |c: &Caller| policy.view(c).unwrap();
        assert_eq!(
            view(&reader),
            view(&token(json!({ "scope": "files:read" })))
        );
        assert_ne!(view(&reader), view(&writer));
        let rule = policy.rule("files", Kind::Tool, "write");
        assert!(view(&writer).sees(rule, "files", "write"));
        assert!(!view(&reader).sees(rule, "files", "write"));
        assert!(policy.view(&Caller::operator()).is_none());
        let unknown =
            policy.unknown_items("files", |kind, name| kind == Kind::Tool && name == "write");
        assert_eq!(unknown, Vec::<String>::new());
        let unknown = policy.unknown_items("files", |_, _| false);
        assert_eq!(unknown, ["tools.\"write\""]);
        assert_eq!(policy.unknown_items("open", |_, _| false), ["tools.\"t\""]);
        assert!(policy_of(
            r#"[plugins.x.tools.t]
            calls_per_sec = 1"#
        )
        .is_open());
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
        let caller = Caller::with_token(None, Map::new()).in_profile(files);
        let refused = policy.check(&caller, "hello", Kind::Tool, "greet", "tool greet");
        assert_eq!(refused.unwrap_err().code, ErrorCode::InvalidParams);
        assert!(policy
            .check(&caller, "filesystem", Kind::Tool, "read_file", "t")
            .is_ok());
        let view = policy.view(&caller).unwrap();
        assert!(view.sees(None, "filesystem", "read_file") && !view.sees(None, "hello", "greet"));
        assert!(Glob::new("a*b*c").matches("a-b-c") && !Glob::new("a*b*c").matches("ac"));
        assert!(Glob::new("*").matches("") && Glob::new("ab*").matches("ab"));
        // Names are the plugins' own: any text, never a panic.
        assert!(!Glob::new("x*é").matches("xab€"));
        assert!(!Glob::new("€*x").matches("€"));
        assert!(Glob::new("p.*é").matches("p.café"));
        assert!(!Glob::new("aa*aa").matches("aaa"));
    }

    #[test]
    fn a_claim_named_with_dots_is_read_whole_first() {
        let caller = token(json!({ "https://example.com/groups": ["eng"] }));
        assert!(caller.has_claim("https://example.com/groups", &["eng".into()]));
        assert!(!caller.has_claim("https://example.com/groups", &["ops".into()]));
        assert!(!caller.has_claim("missing.path", &["eng".into()]));
    }
}
