//! `resources/list`, `resources/templates/list`, `resources/read`, and
//! the handshake's `resources/subscribe` and `resources/unsubscribe`.

use super::{clip, invalid, unless_late, Request, MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS};
use super::{from_call, Answer, Answered};
use crate::protocol::model::{to_json, Empty};
use crate::protocol::params::{self, Params};
use crate::protocol::{Method, RpcError};
use crate::registry::views;
use crate::registry::{Catalogue, ResourceEntry};
use crate::runtime::types;
use crate::server::access::Item;
use crate::server::call::outcome::{failed_request, plugin_error, within_result_limit};
use crate::server::call::Done;
use crate::server::call::{self, Ended, RequestScope, Run, Target};
use crate::server::convert;
use crate::skills::{Skill, SkillFile};
use serde_json::{json, Value};
use std::sync::Arc;

/// `resources/subscribe` (`on`) and `resources/unsubscribe`: the session's
/// subscriptions, bounded in number and URI length.
pub(super) fn subscribe(request: &Request<'_>, on: bool) -> Answered {
    let uri = Params(request.params).str("uri")?;
    let mut session = request.conn.session();
    if !on {
        session.subscriptions.remove(uri);
        return Ok(Answer::Result(to_json(&Empty {})));
    }
    if uri.len() > MAX_SUBSCRIBED_URI {
        return Err(params::invalid(format!(
            "a subscribed URI may have at most {MAX_SUBSCRIBED_URI} bytes"
        )));
    }
    drop(session);
    // What the caller may not read, it may not follow either.
    let catalogue = request.conn.server.registry.catalogue();
    if let Some(item) = item_at(&catalogue, uri) {
        request.may_see(&item, &format!("resource {}", clip(uri)))?;
    }
    let mut session = request.conn.session();
    if session.subscriptions.len() >= MAX_SUBSCRIPTIONS && !session.subscriptions.contains(uri) {
        return Err(invalid(format!(
            "a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources"
        )));
    }
    session.subscriptions.insert(uri.to_owned());
    Ok(Answer::Result(to_json(&Empty {})))
}

/// `resources/read`.
pub(super) async fn read(request: &Request<'_>, catalogue: &Catalogue) -> Answered {
    let (params, era) = (request.params, request.era);
    let uri = Params(params).str("uri")?;
    let not_found = || {
        RpcError::new(
            era.resource_not_found(),
            unless_late(request, format!("Resource not found: {}", clip(uri))),
        )
        .with_data(json!({ "uri": clip(uri) }))
    };
    if let Some(file) = catalogue.listed_resource(uri).and_then(skill_file) {
        let (owner, skill, file) = file;
        request.may_see(
            &Item::skill(owner, skill),
            &format!("resource {}", clip(uri)),
        )?;
        return Ok(Answer::Result(
            json!({ "contents": [convert::skill_file_contents(file)] }),
        ));
    }
    let (owner, served_as) = catalogue.resource_entry(uri).ok_or_else(not_found)?;
    request.may_use(
        &Item::resource(owner.name(), served_as),
        &format!("resource {}", clip(uri)),
    )?;
    let plugin = owner.clone();
    let (target, code) = (uri.to_owned(), era.resource_not_found());
    let target_of_call = Target {
        method: Method::ReadResource,
        name: uri,
        arguments: &Value::Null,
    };
    let call = move |context: Arc<RequestScope>| async move {
        let outcome = match plugin.read_resource(context, &target).await {
            Ok(Ok(mut contents)) => {
                let max_view = plugin.grants().limits.max_view_bytes;
                views::check_read(plugin.name(), max_view, &mut contents)
                    .and_then(|()| {
                        let result = json!({ "contents": contents.iter().map(convert::resource_contents).collect::<Vec<_>>() });
                        within_result_limit(&plugin, result)
                    })
                    .map(Done::Result)
                    .map_err(RpcError::internal)
            }
            Ok(Err(types::Error::NotFound(_))) => {
                Err(RpcError::new(code, format!("Resource not found: {target}"))
                    .with_data(json!({ "uri": clip(&target) })))
            }
            Ok(Err(error)) => Err(plugin_error(error, code)),
            Err(error) => failed_request(&plugin, error),
        };
        Ended::from(outcome)
    };
    let asked = request.call_request();
    from_call(
        call::run(asked, owner.name(), target_of_call, Run::Inline, call)
            .await?
            .into_outcome(),
    )
}

/// What serves `uri` for the access policy: a skill (whichever of its
/// files), a plugin's resource, or the template that matches it.
pub(super) fn item_at<'c>(catalogue: &'c Catalogue, uri: &'c str) -> Option<Item<'c>> {
    if let Some((owner, skill, _)) = catalogue.listed_resource(uri).and_then(skill_file) {
        return Some(Item::skill(owner, skill));
    }
    let (owner, served_as) = catalogue.resource_entry(uri)?;
    Some(Item::resource(owner.name(), served_as))
}

/// The plugin, skill and file of a resource that is a skill's file.
fn skill_file(entry: &ResourceEntry) -> Option<(&str, &Skill, &SkillFile)> {
    let (skill, file) = entry.skill_file.as_ref()?;
    Some((entry.plugin.name(), skill, file))
}
