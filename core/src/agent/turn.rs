//! One prompt turn: the user's message goes to the model, the streamed answer goes out as
//! `session/update`s through the ledger, and the turn ends with exactly one stop reason.
//!
//! Cancellation: every await in here races the turn's token. Once it fires the turn stops
//! emitting, flushes the ledger (so what was already queued reaches the client) and only then
//! answers, so no update of a cancelled turn can follow its `session/prompt` response.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use super::accounting;
use super::client_features::ClientFeatures;
use super::commands::{self, COMPACT_PROMPT, Command};
use super::ledger::{emit, record_message, text_chunk};
use super::permission::{self, Asker, Decision};
use super::session::{Session, TurnClaim};
use crate::config::{Config, TestFault};
use crate::provider::{
    ChatMessage, ChatParams, FinishReason, FunctionCall, ModelEvent, RetryPolicy, Started, ToolCallRequest, start_chat,
};
use crate::rpc::{Peer, RpcError};
use crate::store::time::now_rfc3339;
use crate::store::writer::{LedgerTx, Record};
use crate::tools::{self, Jail};

/// Everything a turn needs besides the session itself.
pub struct TurnContext {
    pub ledger: LedgerTx,
    pub peer: Peer,
    pub http: reqwest::Client,
    pub config: Arc<Config>,
    pub client: ClientFeatures,
}

/// The prompt as the turn receives it.
pub struct UserPrompt {
    /// What the model reads.
    pub text: String,
    /// Images attached to it (stored under `uploads/`).
    pub images: Vec<crate::provider::ImageRef>,
    /// The blocks as the client sent them (replayed as `user_message_chunk`s).
    pub blocks: Vec<acp::ContentBlock>,
}

/// Longest session title taken from a first prompt.
const TITLE_CHARS: usize = 80;

/// A title from the first prompt: its first non-empty line, trimmed, at most 80 characters.
pub fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    Some(title)
}

pub async fn run_turn(claim: TurnClaim, prompt: UserPrompt, ctx: TurnContext) -> Result<acp::StopReason, RpcError> {
    let session = claim.session.clone();
    let cancel = claim.cancel.clone();
    let turn = claim.number as i64;
    let ledger = &ctx.ledger;

    let command = commands::parse(&prompt.text);
    let user_id = uuid::Uuid::new_v4().to_string();
    for block in prompt.blocks {
        let chunk = acp::ContentChunk::new(block).message_id(acp::MessageId::new(user_id.clone()));
        emit(ledger, &session, Some(turn), &acp::SessionUpdate::UserMessageChunk(chunk), false).await;
    }
    announce_title(ledger, &session, turn, &prompt.text).await;

    // A panic anywhere in the turn (a bug) fails this turn only: it is stored as failed with
    // a note the user sees, the prompt gets -32603, and the claim is released so the session
    // takes the next prompt. Session state behind a poisoned lock is still usable (plain data).
    let body = AssertUnwindSafe(turn_body(&session, command, prompt.text, prompt.images, &ctx, turn, &cancel))
        .catch_unwind()
        .await;
    let outcome = match body {
        Ok(outcome) => outcome,
        Err(panic) => {
            let what = crate::rpc::panic_message(&panic);
            tracing::error!(session_id = %session.id, turn, panic = %what, "a prompt turn panicked");
            let note = format!(
                "\n\n⚠️ Corvid hit an internal error and ended this turn ({what}). You can send another prompt."
            );
            let chunk = text_chunk(note, &uuid::Uuid::new_v4().to_string());
            emit(ledger, &session, Some(turn), &acp::SessionUpdate::AgentMessageChunk(chunk), true).await;
            Err(RpcError::Internal(format!("session/prompt: the turn failed: {what}")))
        }
    };
    // A cancel that raced the end of the stream still wins: the client was promised `cancelled`.
    let outcome = if cancel.is_cancelled() { Ok(acp::StopReason::Cancelled) } else { outcome };
    if let Ok(acp::StopReason::Refusal) = outcome {
        // The protocol says the client drops the refused prompt; so does the model's context.
        let mut state = session.state();
        if let Some(pos) = state.history.iter().rposition(|m| m.role == crate::provider::Role::User) {
            state.history.truncate(pos);
        }
    }
    let stop_reason =
        outcome.as_ref().ok().map(|r| serde_json::to_value(r).ok().and_then(|v| v.as_str().map(String::from)));
    ledger
        .push(Record::TurnEnd {
            session_id: session.id.clone(),
            turn,
            status: if outcome.is_ok() { "finished" } else { "failed" },
            stop_reason: stop_reason.flatten(),
            at: now_rfc3339(),
        })
        .await;
    // Durable, and every frame of this turn handed to the client, before the response.
    ledger.flush().await;
    drop(claim);
    outcome
}

/// The turn proper: a command, or the user's message through the agent loop.
async fn turn_body(
    session: &Arc<Session>,
    command: Option<Command>,
    text: String,
    images: Vec<crate::provider::ImageRef>,
    ctx: &TurnContext,
    turn: i64,
    cancel: &CancellationToken,
) -> Result<acp::StopReason, RpcError> {
    let ledger = &ctx.ledger;
    match command {
        Some(Command::Compact) => compact(session, ctx, turn, cancel).await,
        command => {
            // A command becomes the instruction it stands for; the client still shows what was typed.
            let text = match command {
                Some(Command::Prompt(instruction)) => instruction,
                _ => text,
            };
            let mut user_message = ChatMessage::user(text);
            user_message.images = images;
            record_message(ledger, session, &user_message).await;
            let (model, mut messages) = {
                let mut state = session.state();
                state.history.push(user_message);
                (state.model.clone(), state.history.clone())
            };
            messages.insert(0, ChatMessage::system(session.system_prompt()));
            agent_loop(session, ctx, turn, &model, messages, cancel).await
        }
    }
}

/// The first prompt of a session names it.
async fn announce_title(ledger: &LedgerTx, session: &Session, turn: i64, text: &str) {
    let title = {
        let mut state = session.state();
        if state.title.is_some() {
            return;
        }
        let Some(title) = title_from(text) else { return };
        state.title = Some(title.clone());
        title
    };
    ledger.push(Record::Title { session_id: session.id.clone(), title: title.clone() }).await;
    let info = acp::SessionInfoUpdate::new().title(title).updated_at(now_rfc3339());
    emit(ledger, session, Some(turn), &acp::SessionUpdate::SessionInfoUpdate(info), true).await;
}

/// Model → tool calls → results → model … until the model stops asking for tools.
async fn agent_loop(
    session: &Arc<Session>,
    ctx: &TurnContext,
    turn: i64,
    model: &str,
    mut messages: Vec<ChatMessage>,
    cancel: &CancellationToken,
) -> Result<acp::StopReason, RpcError> {
    let mut specs: Vec<_> = tools::specs().into_iter().filter(|s| session.tool_enabled(&s.function.name)).collect();
    if let Some(mcp) = session.mcp.get() {
        specs.extend(mcp.specs());
    }
    let jail = Jail::new(session.roots.clone(), ctx.config.forbidden_paths.clone());
    let mut calls_made = 0u32;
    for _request in 0..ctx.config.max_turn_requests {
        let spent = session.state().spent;
        if let Some(why) = accounting::exhausted(spent, &ctx.config) {
            let chunk = text_chunk(why, &uuid::Uuid::new_v4().to_string());
            emit(&ctx.ledger, session, Some(turn), &acp::SessionUpdate::AgentMessageChunk(chunk), true).await;
            return Ok(acp::StopReason::MaxTokens);
        }
        let mut text = String::new();
        let step = stream_step(session, ctx, turn, model, &messages, &specs, cancel, &mut text, TextAs::Message).await;
        let step = match step {
            Ok(Some(step)) => step,
            other => {
                // Keep what the user saw in the context, even for a cancelled or failed turn.
                if !text.is_empty() {
                    remember(ctx, session, &mut messages, ChatMessage::assistant(text, Vec::new())).await;
                }
                return other.map(|_| acp::StopReason::Cancelled);
            }
        };
        let mut assistant = ChatMessage::assistant(text, step.tool_calls.clone());
        assistant.thinking = step.thinking;
        if !assistant.content.is_empty() || !assistant.tool_calls.is_empty() {
            remember(ctx, session, &mut messages, assistant).await;
        }
        if step.tool_calls.is_empty() {
            return Ok(match step.finish {
                Some(FinishReason::Length) => acp::StopReason::MaxTokens,
                Some(FinishReason::ContentFilter) => acp::StopReason::Refusal,
                _ => acp::StopReason::EndTurn,
            });
        }
        let mut cancelled = false;
        for call in &step.tool_calls {
            calls_made += 1;
            let result = if cancelled {
                "cancelled by the user before it ran".to_string()
            } else {
                match run_tool_call(session, ctx, turn, calls_made, call, &jail, cancel).await {
                    Some(text) => text,
                    None => {
                        cancelled = true;
                        "cancelled by the user".to_string()
                    }
                }
            };
            // Every tool call gets an answer, or the provider rejects the next request.
            remember(ctx, session, &mut messages, ChatMessage::tool_result(call.id.clone(), result)).await;
        }
        if cancelled {
            return Ok(acp::StopReason::Cancelled);
        }
    }
    Ok(acp::StopReason::MaxTurnRequests)
}

/// `/compact`: the model summarizes the conversation, and the summary replaces it.
async fn compact(
    session: &Arc<Session>,
    ctx: &TurnContext,
    turn: i64,
    cancel: &CancellationToken,
) -> Result<acp::StopReason, RpcError> {
    let (model, history) = {
        let state = session.state();
        (state.model.clone(), state.history.clone())
    };
    let say = |text: String| acp::SessionUpdate::AgentMessageChunk(text_chunk(text, &uuid::Uuid::new_v4().to_string()));
    if history.is_empty() {
        emit(&ctx.ledger, session, Some(turn), &say("Nothing to compact yet.".into()), true).await;
        return Ok(acp::StopReason::EndTurn);
    }
    let mut messages = vec![ChatMessage::system(session.system_prompt())];
    messages.extend(history.iter().cloned());
    messages.push(ChatMessage::user(COMPACT_PROMPT));
    let mut summary = String::new();
    // Clients that know compaction get it as such; others see the summary as an answer.
    let compaction_id = uuid::Uuid::new_v4().to_string();
    let text_as = if ctx.client.compaction { TextAs::Compaction(&compaction_id) } else { TextAs::Message };
    let report = async |status: acp::CompactionStatus, error: Option<String>, text: Option<&str>| {
        if !ctx.client.compaction {
            return;
        }
        let mut update = acp::CompactionUpdate::new(compaction_id.clone(), status);
        if let Some(error) = error {
            update = update.error(error);
        }
        if let Some(text) = text {
            update = update.summary(vec![acp::ContentBlock::from(text.to_string())]);
        }
        emit(&ctx.ledger, session, Some(turn), &acp::SessionUpdate::CompactionUpdate(update), true).await;
    };
    report(acp::CompactionStatus::InProgress, None, None).await;
    let step = stream_step(session, ctx, turn, &model, &messages, &[], cancel, &mut summary, text_as).await;
    match &step {
        Ok(Some(_)) => {}
        Ok(None) => {
            // Still before the prompt's response, so the client can close the compaction.
            report(acp::CompactionStatus::Cancelled, None, None).await;
            return Ok(acp::StopReason::Cancelled);
        }
        Err(e) => {
            report(acp::CompactionStatus::Failed, Some(e.to_string()), None).await;
            step?;
        }
    }
    let kept = ChatMessage::user(format!("Summary of the conversation so far:\n\n{summary}"));
    let stored = vec![("user", serde_json::to_string(&kept).unwrap_or_default())];
    {
        let mut state = session.state();
        state.history = vec![kept];
        state.next_message_seq = 2;
    }
    ctx.ledger.push(Record::ReplaceMessages { session_id: session.id.clone(), messages: stored }).await;
    if ctx.client.compaction {
        report(acp::CompactionStatus::Completed, None, Some(&summary)).await;
    } else {
        let note = format!("\n\n_Compacted {} messages into this summary._", history.len());
        emit(&ctx.ledger, session, Some(turn), &say(note), true).await;
    }
    Ok(acp::StopReason::EndTurn)
}

/// Appends to the model context, in memory and in the store.
async fn remember(ctx: &TurnContext, session: &Session, messages: &mut Vec<ChatMessage>, message: ChatMessage) {
    record_message(&ctx.ledger, session, &message).await;
    session.state().history.push(message.clone());
    messages.push(message);
}

/// One model request's outcome (its text is accumulated in the caller's buffer).
struct Step {
    tool_calls: Vec<ToolCallRequest>,
    finish: Option<FinishReason>,
    /// Provider reasoning blocks to send back with the assistant message.
    thinking: Vec<serde_json::Value>,
}

/// How a streamed answer's text is shown.
#[derive(Clone, Copy)]
enum TextAs<'a> {
    Message,
    /// The summary of the compaction with this id (`compaction_summary_chunk`).
    Compaction(&'a str),
}

/// Streams one model response to the client. `None` when cancelled.
#[allow(clippy::too_many_arguments)]
async fn stream_step(
    session: &Session,
    ctx: &TurnContext,
    turn: i64,
    model: &str,
    messages: &[ChatMessage],
    specs: &[crate::provider::ToolSpec],
    cancel: &CancellationToken,
    text: &mut String,
    text_as: TextAs<'_>,
) -> Result<Option<Step>, RpcError> {
    let retry = RetryPolicy {
        max_retries: ctx.config.max_retries,
        base_delay: Duration::from_millis(250),
        max_delay: Duration::from_secs(8),
    };
    let params = ChatParams {
        model,
        messages,
        tools: specs,
        thinking_budget: session.thinking_budget(model),
        max_output_tokens: ctx.config.max_output_tokens,
        images: crate::provider::supports_images(session.source.endpoint.kind, model, ctx.config.images),
    };
    let started =
        start_chat(&ctx.http, &session.source.endpoint, &params, &retry, ctx.config.stall_timeout, cancel).await?;
    let mut stream = match started {
        Started::Stream(s) => s,
        Started::Cancelled => return Ok(None),
    };
    let message_id = uuid::Uuid::new_v4().to_string();
    let thought_id = uuid::Uuid::new_v4().to_string();
    let mut step = Step { tool_calls: Vec::new(), finish: None, thinking: Vec::new() };
    // Tool-call fragments by index: (id, name, arguments).
    let mut partial: std::collections::BTreeMap<u32, (String, String, String)> = Default::default();
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(None),
            e = stream.next() => e,
        };
        let update = match event {
            None => break,
            Some(Err(e)) => return Err(RpcError::from(e)),
            Some(Ok(ModelEvent::Text(t))) => {
                text.push_str(&t);
                if ctx.config.test_fault == Some(TestFault::PanicInTurn) && text.contains(TestFault::PANIC_MARKER) {
                    panic!("test fault: panic-in-turn");
                }
                match text_as {
                    TextAs::Message => acp::SessionUpdate::AgentMessageChunk(text_chunk(t, &message_id)),
                    TextAs::Compaction(id) => acp::SessionUpdate::CompactionSummaryChunk(
                        acp::CompactionSummaryChunk::new(id.to_string(), acp::ContentBlock::from(t)),
                    ),
                }
            }
            Some(Ok(ModelEvent::Reasoning(r))) => acp::SessionUpdate::AgentThoughtChunk(text_chunk(r, &thought_id)),
            Some(Ok(ModelEvent::Finish(reason))) => {
                step.finish = Some(reason);
                continue;
            }
            Some(Ok(ModelEvent::ReasoningBlock(block))) => {
                step.thinking.push(block);
                continue;
            }
            Some(Ok(ModelEvent::Usage { input_tokens, output_tokens })) => {
                acp::SessionUpdate::UsageUpdate(accounting::record(session, &ctx.config, input_tokens, output_tokens))
            }
            Some(Ok(ModelEvent::ToolCallDelta { index, id, name, arguments })) => {
                let entry = partial.entry(index).or_default();
                if let Some(id) = id.filter(|i| !i.is_empty()) {
                    entry.0 = id;
                }
                if let Some(name) = name {
                    entry.1.push_str(&name);
                }
                entry.2.push_str(&arguments);
                continue;
            }
        };
        let sent = tokio::select! {
            biased;
            () = cancel.cancelled() => false,
            ok = emit(&ctx.ledger, session, Some(turn), &update, true) => ok,
        };
        if !sent {
            return Ok(None);
        }
    }
    step.tool_calls = partial
        .into_iter()
        .map(|(index, (id, name, arguments))| ToolCallRequest {
            id: if id.is_empty() { format!("call_{turn}_{index}") } else { id },
            kind: "function".into(),
            function: FunctionCall {
                name,
                arguments: if arguments.trim().is_empty() { "{}".into() } else { arguments },
            },
        })
        .collect();
    Ok(Some(step))
}

async fn tool_update(
    ctx: &TurnContext,
    session: &Session,
    turn: i64,
    id: &str,
    fields: acp::ToolCallUpdateFields,
) -> bool {
    let update = acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id.to_string(), fields));
    emit(&ctx.ledger, session, Some(turn), &update, true).await
}

fn failed(message: &str) -> acp::ToolCallUpdateFields {
    acp::ToolCallUpdateFields::new()
        .status(acp::ToolCallStatus::Failed)
        .content(vec![acp::ToolCallContent::from(acp::ContentBlock::from(message.to_string()))])
        .raw_output(serde_json::json!({ "error": message }))
}

/// Announces, authorizes and runs one tool call. Returns what the model reads, or `None` if
/// the user cancelled the turn.
async fn run_tool_call(
    session: &Arc<Session>,
    ctx: &TurnContext,
    turn: i64,
    n: u32,
    call: &ToolCallRequest,
    jail: &Jail,
    cancel: &CancellationToken,
) -> Option<String> {
    // The model's ids may repeat across requests (some servers number them per response),
    // so the client sees ids of our own, unique in the session.
    let id = format!("t{turn}-{n}");
    let name = call.function.name.as_str();
    let parsed = serde_json::from_str::<serde_json::Value>(&call.function.arguments);
    let args = parsed.as_ref().cloned().unwrap_or(serde_json::Value::Null);
    let announced = match &parsed {
        Ok(_) => match session.mcp.get() {
            Some(mcp) if name.starts_with(crate::mcp::PREFIX) => mcp.announce(name),
            _ => tools::announce(name, &args, jail),
        },
        Err(e) => Err(tools::ToolError::Arguments { tool: name.to_string(), reason: format!("not valid JSON: {e}") }),
    };
    let (title, kind, locations) = match &announced {
        Ok(a) => (a.title.clone(), a.kind, a.locations.clone()),
        Err(_) => (name.to_string(), acp::ToolKind::Other, vec![]),
    };
    let tool_call = acp::ToolCall::new(id.clone(), title)
        .name(name.to_string())
        .kind(kind)
        .status(acp::ToolCallStatus::Pending)
        .locations(locations)
        .raw_input(args.clone());
    emit(&ctx.ledger, session, Some(turn), &acp::SessionUpdate::ToolCall(tool_call), true).await;

    let announce = match announced {
        Ok(a) => a,
        Err(e) => {
            let message = e.to_string();
            tool_update(ctx, session, turn, &id, failed(&message)).await;
            return Some(format!("error: {message}"));
        }
    };

    // The tool card must be on screen before the permission question.
    ctx.ledger.flush().await;
    let asker = Asker { peer: &ctx.peer, ledger: &ctx.ledger, deadline: ctx.config.permission_timeout, cancel };
    // An edit is worked out before anyone is asked: the question shows its diff, and an edit
    // that cannot apply (no match, several matches) fails without bothering the user.
    let mut preview = Vec::new();
    if matches!(name, "write_file" | "edit_file") && announce.needs != tools::Needs::Nothing {
        match tools::fs::plan_change(name, &args, jail, &files_for(ctx, session)).await {
            Ok(change) => preview.push(change.diff()),
            Err(e) => {
                let message = e.to_string();
                tool_update(ctx, session, turn, &id, failed(&message)).await;
                return Some(format!("error: {message}"));
            }
        }
    }
    let (decision, note) = permission::decide(session, name, &id, &announce, &args, preview, &asker).await;
    if let Some(note) = note {
        let chunk = text_chunk(format!("\n\n{note}\n\n"), &uuid::Uuid::new_v4().to_string());
        emit(&ctx.ledger, session, Some(turn), &acp::SessionUpdate::AgentMessageChunk(chunk), true).await;
    }
    match decision {
        Decision::Cancelled => return None,
        Decision::Reject(reason) => {
            tool_update(ctx, session, turn, &id, failed(&format!("Not run: {reason}."))).await;
            return Some(format!(
                "The user declined this tool call ({reason}). Do not retry it unchanged; ask or try another way."
            ));
        }
        Decision::Allow => {}
    }
    let running = acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress);
    if !tool_update(ctx, session, turn, &id, running).await {
        return None;
    }
    let result = execute(session, ctx, turn, &id, name, &args, jail, cancel).await;
    if cancel.is_cancelled() {
        return None;
    }
    match result {
        Ok((output, ok)) => {
            let status = if ok { acp::ToolCallStatus::Completed } else { acp::ToolCallStatus::Failed };
            let fields = acp::ToolCallUpdateFields::new().status(status).content(output.content).raw_output(output.raw);
            tool_update(ctx, session, turn, &id, fields).await;
            Some(output.for_model)
        }
        Err(e) => {
            let message = e.to_string();
            tool_update(ctx, session, turn, &id, failed(&message)).await;
            Some(format!("error: {message}"))
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn execute(
    session: &Session,
    ctx: &TurnContext,
    turn: i64,
    id: &str,
    name: &str,
    args: &serde_json::Value,
    jail: &Jail,
    cancel: &CancellationToken,
) -> Result<(tools::Output, bool), tools::ToolError> {
    if !session.tool_enabled(name) {
        return Err(tools::ToolError::Unknown(name.to_string()));
    }
    match name {
        "update_plan" => {
            let plan = tools::plan::plan(args)?;
            let count = plan.entries.len();
            emit(&ctx.ledger, session, Some(turn), &acp::SessionUpdate::Plan(plan), true).await;
            let raw = serde_json::json!({ "entries": count });
            Ok((tools::Output::text(format!("Plan updated ({count} entries)"), raw), true))
        }
        mcp_tool if mcp_tool.starts_with(crate::mcp::PREFIX) => match session.mcp.get() {
            Some(mcp) => mcp.call(mcp_tool, args, &ctx.config.data_dir.join("uploads"), cancel).await,
            None => Err(tools::ToolError::Unknown(mcp_tool.to_string())),
        },
        "run_command" if ctx.client.terminal => {
            let client = tools::terminal::ClientTerminal {
                peer: ctx.peer.clone(),
                session_id: session.id.clone(),
                deadline: ctx.config.client_request_timeout,
            };
            let created = async |terminal_id: &str| {
                let terminal = acp::ToolCallContent::Terminal(acp::Terminal::new(terminal_id.to_string()));
                tool_update(ctx, session, turn, id, acp::ToolCallUpdateFields::new().content(vec![terminal])).await;
                // On screen before the command can finish and the terminal be released.
                ctx.ledger.flush().await;
            };
            tools::terminal::run(args, jail, &client, created, cancel).await
        }
        "run_command" => run_local_command(ctx, session, turn, id, args, jail, cancel).await,
        "read_file" | "write_file" | "edit_file" => {
            let files = files_for(ctx, session);
            let out = match name {
                "read_file" => tools::fs::read_file(args, jail, &files).await,
                _ => match tools::fs::plan_change(name, args, jail, &files).await {
                    Ok(change) => change.apply(jail, &files).await,
                    Err(e) => Err(e),
                },
            };
            out.map(|o| (o, true))
        }
        "ask_user" => {
            let how = tools::ask::Asking {
                peer: &ctx.peer,
                session_id: &session.id,
                tool_call_id: id,
                deadline: ctx.config.permission_timeout,
                form: ctx.client.elicitation_form,
            };
            let answer = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(tools::ToolError::Failed("cancelled".into())),
                a = tools::ask::ask(args, &how) => a?,
            };
            match answer {
                tools::ask::Answer::Said(output) => Ok((output, true)),
                tools::ask::Answer::Cancelled => {
                    cancel.cancel();
                    Err(tools::ToolError::Failed("cancelled".into()))
                }
            }
        }
        _ => {
            let (name, args, jail) = (name.to_string(), args.clone(), jail.clone());
            tokio::task::spawn_blocking(move || {
                let out = match name.as_str() {
                    "list_directory" => tools::fs::list_directory(&args, &jail),
                    "glob" => tools::search::glob(&args, &jail),
                    "search" => tools::search::search(&args, &jail),
                    "deliver_file" => tools::deliver::deliver(&args, &jail),
                    other => Err(tools::ToolError::Unknown(other.to_string())),
                };
                out.map(|o| (o, true))
            })
            .await
            .unwrap_or_else(|e| Err(tools::ToolError::Failed(format!("the tool crashed: {e}"))))
        }
    }
}

/// Where the file tools read and write for this session: the editor when it offers, else disk.
fn files_for(ctx: &TurnContext, session: &Session) -> tools::files::Files {
    if !ctx.client.read_text_file && !ctx.client.write_text_file {
        return tools::files::Files::Disk;
    }
    tools::files::Files::Client(tools::files::ClientFiles {
        peer: ctx.peer.clone(),
        session_id: session.id.clone(),
        deadline: ctx.config.client_request_timeout,
        read: ctx.client.read_text_file,
        write: ctx.client.write_text_file,
    })
}

/// run_command on this machine, its output streamed into the tool card at most every 100 ms.
async fn run_local_command(
    ctx: &TurnContext,
    session: &Session,
    turn: i64,
    id: &str,
    args: &serde_json::Value,
    jail: &Jail,
    cancel: &CancellationToken,
) -> Result<(tools::Output, bool), tools::ToolError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let run = tools::shell::run(args, jail, tx, cancel);
    tokio::pin!(run);
    let mut last_sent = tokio::time::Instant::now();
    let mut pending: Option<String> = None;
    loop {
        tokio::select! {
            result = &mut run => return result,
            Some(text) = rx.recv() => pending = Some(text),
            () = tokio::time::sleep(Duration::from_millis(100)), if pending.is_some() => {}
        }
        if last_sent.elapsed() >= Duration::from_millis(100)
            && let Some(text) = pending.take()
        {
            let fields = acp::ToolCallUpdateFields::new()
                .content(vec![acp::ToolCallContent::from(acp::ContentBlock::from(text))]);
            tool_update(ctx, session, turn, id, fields).await;
            last_sent = tokio::time::Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::title_from;

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_from("\n  Fix the parser  \nmore").as_deref(), Some("Fix the parser"));
        assert_eq!(title_from("   \n ").as_deref(), None);
        let long = "x".repeat(100);
        assert_eq!(title_from(&long).map(|t| t.chars().count()), Some(81));
    }
}
