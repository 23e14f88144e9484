//! The `host` interface plugins import, defined on the linker by hand so
//! that nothing a plugin passes is copied before it is checked: a log line,
//! progress message or URI is counted against the call's notification
//! quota first and read only if it is within `max_message_bytes`;
//! questions are lifted under the call's budget (see [`super::lift`]).

use super::bindings::wasm_mcp::plugin::host::{self as wit, Answer, InputError};
use super::bindings::wasm_mcp::plugin::types::LogLevel;
use super::lift::{self, BoundedList, BoundedStr, GuestStr, IntoOwned};
use super::state::CallState;
use wasmtime::component::{Linker, LinkerInstance};
use wasmtime::StoreContextMut;

type Store<'a> = StoreContextMut<'a, CallState>;

/// Defines `wasm-mcp:plugin/host@0.1.0` in `linker`.
pub(super) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    let mut host = linker.instance("wasm-mcp:plugin/host@0.1.0")?;
    add_notices(&mut host)?;
    add_questions(&mut host)
}

/// What a plugin tells the client or the host: logs, progress, change
/// notices, and its wish to go on as a task.
fn add_notices(host: &mut LinkerInstance<'_, CallState>) -> wasmtime::Result<()> {
    host.func_wrap(
        "log",
        |mut store: Store<'_>, (level, message): (LogLevel, GuestStr)| {
            if store.data().quota.take() {
                let text = message_text(&mut store, &message, "log message")?;
                store.data().context.log(level, text);
            }
            Ok(())
        },
    )?;
    host.func_wrap(
        "progress",
        |mut store: Store<'_>, (progress, total, message): (f64, Option<f64>, Option<GuestStr>)| {
            if store.data().quota.take() {
                let message = match &message {
                    Some(m) => Some(message_text(&mut store, m, "progress message")?),
                    None => None,
                };
                store.data().context.progress(progress, total, message);
            }
            Ok(())
        },
    )?;
    host.func_wrap("is-cancelled", |store: Store<'_>, (): ()| {
        Ok((store.data().context.is_cancelled(),))
    })?;
    host.func_wrap(
        "list-changed",
        |store: Store<'_>, (kind,): (wit::ListKind,)| {
            if store.data().quota.take() {
                store.data().context.list_changed(kind);
            }
            Ok(())
        },
    )?;
    host.func_wrap(
        "resource-updated",
        |store: Store<'_>, (uri,): (GuestStr,)| {
            let state = store.data();
            if !state.quota.take() {
                return Ok(());
            }
            if uri.len() > state.max_message_bytes {
                state.quota.drop_one();
                return Ok(());
            }
            let uri = uri.to_str(&store)?.into_owned();
            store.data().context.resource_updated(uri);
            Ok(())
        },
    )?;
    host.func_wrap("continue-as-task", |store: Store<'_>, (): ()| {
        Ok((store.data().context.continue_as_task(),))
    })?;
    Ok(())
}

/// What a plugin asks the client: elicitation, sampling, roots, or several
/// questions at once.
fn add_questions(host: &mut LinkerInstance<'_, CallState>) -> wasmtime::Result<()> {
    host.func_wrap_async(
        "elicit",
        |mut store: Store<'_>, (request,): (lift::ElicitationRequest,)| {
            Box::new(async move {
                let question = wit::Question::Elicit(request.into_owned());
                let answer = store.data_mut().ask_one("elicitation", question).await;
                Ok((answer.map(|a| match a {
                    Answer::Elicit(answer) => answer,
                    _ => unreachable!("an elicitation is answered by an elicitation"),
                }),))
            })
        },
    )?;
    host.func_wrap_async(
        "sample",
        |mut store: Store<'_>, (request,): (lift::SamplingRequest,)| {
            Box::new(async move {
                let question = wit::Question::Sample(request.into_owned());
                let answer = store.data_mut().ask_one("sampling", question).await;
                Ok((answer.map(|a| match a {
                    Answer::Sample(answer) => answer,
                    _ => unreachable!("a sampling request is answered by a sampling result"),
                }),))
            })
        },
    )?;
    host.func_wrap_async("roots", |mut store: Store<'_>, (): ()| {
        Box::new(async move {
            let answer = store
                .data_mut()
                .ask_one("roots", wit::Question::Roots)
                .await;
            Ok((answer.map(|a| match a {
                Answer::Roots(roots) => roots,
                _ => unreachable!("roots/list is answered by roots"),
            }),))
        })
    })?;
    host.func_wrap_async(
        "ask",
        |mut store: Store<'_>, (questions,): (BoundedList<(BoundedStr, lift::Question)>,)| {
            Box::new(async move {
                let answers: Vec<Result<Answer, InputError>> =
                    store.data_mut().ask(questions.into_owned()).await;
                Ok((answers,))
            })
        },
    )?;
    Ok(())
}

/// The text of a message the plugin sends the client, or a note in its
/// place when it is over the plugin's `max_message_bytes` (then it is never
/// read).
fn message_text(store: &mut Store<'_>, text: &GuestStr, what: &str) -> wasmtime::Result<String> {
    let max = store.data().max_message_bytes;
    if text.len() > max {
        store.data().quota.drop_one();
        return Ok(format!(
            "({what} of {} bytes dropped: over this plugin's limit of {max} bytes)",
            text.len()
        ));
    }
    Ok(text.to_str(&*store)?.into_owned())
}
