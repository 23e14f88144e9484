//! `subscriptions/listen` (2026-07-28): what the acknowledgement says is
//! honoured, and the params of the notifications a listener's stream
//! carries, each tagged with the subscription in `_meta`.

use serde::Serialize;
use serde_json::Value;

/// The `_meta` tagging every message of one subscription with its id
/// (the `subscriptions/listen` request's id).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubscriptionTag<'a> {
    /// The subscription's id.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: &'a Value,
}

/// What a listener is told it follows: only what it asked for and may
/// have.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Honored<'a> {
    /// Changes of the tools list.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    /// Changes of the prompts list.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    /// Changes of the resources list.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    /// The resources followed, when it asked for some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<&'a [String]>,
    /// The tasks followed, when it asked for some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<&'a [String]>,
}

/// `notifications/subscriptions/acknowledged` params.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubscriptionAcknowledged<'a> {
    /// The subscription's tag.
    #[serde(rename = "_meta")]
    pub meta: &'a SubscriptionTag<'a>,
    /// What it follows.
    pub notifications: Honored<'a>,
}

/// A listener's notification or result that carries nothing but its tag
/// (a list changed; the subscription ended).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tagged<'a> {
    /// The subscription's tag.
    #[serde(rename = "_meta")]
    pub meta: &'a SubscriptionTag<'a>,
}

/// `notifications/resources/updated` params on a listener's stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceUpdated<'a> {
    /// The resource that changed.
    pub uri: &'a str,
    /// The subscription's tag.
    #[serde(rename = "_meta")]
    pub meta: &'a SubscriptionTag<'a>,
}

/// A message from the host (an alert) on a listener's stream: a
/// `notifications/message`'s params with the subscription's tag.
#[derive(Debug, Clone, Serialize)]
pub struct TaggedLogMessage<'a, M: Serialize> {
    /// The message's params.
    #[serde(flatten)]
    pub message: M,
    /// The subscription's tag.
    #[serde(rename = "_meta")]
    pub meta: &'a SubscriptionTag<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::meta;

    #[test]
    fn the_tag_is_named_as_the_protocol_names_it() {
        let id = Value::from(7);
        let tag = serde_json::to_value(SubscriptionTag {
            subscription_id: &id,
        })
        .unwrap();
        assert_eq!(tag[meta::SUBSCRIPTION_ID], 7);
    }
}
