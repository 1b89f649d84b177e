//! One prompt turn: the user's message goes to the model, the streamed answer goes out as
//! `session/update`s through the outbox, and the turn ends with exactly one stop reason.
//!
//! A [`Turn`] owns everything one turn needs (session, number, token, editor, config); its
//! steps are methods: the model request (`model_step`), each tool call (`tool_call`), and
//! `/compact` (`compact`).
//!
//! Cancellation: every wait in a turn on something outside it (the model stream, the editor's
//! answers, a tool's work) races the turn's token; queuing an update waits only for room in the
//! outbox (a client that stops reading slows the turn down). Once the token fires the turn
//! stops emitting, flushes the outbox (so what was already queued reaches the client) and only
//! then answers, so no update of a cancelled turn can follow its `session/prompt` response.

mod batches;
mod compact;
mod delegate;
mod model_step;
mod tool_call;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use super::accounting;
use super::commands::{self, Command};
use super::compaction;
use super::outbox::{agent_note, emit, record_message, send_live};
use super::session::{Session, TurnClaim};
use crate::agent::error::AgentError;
use crate::agent::outbox::Outbox;
use crate::config::Config;
use crate::editor::{ClientFeatures, Deadlines, EditorClient};
use crate::event::v2::{Live, TurnState};
use crate::event::{Event, StopReason, TurnEnd, TurnTokens};
use crate::provider::{ChatMessage, FinishReason, ProviderError};
use crate::rpc::Peer;
use crate::store::batch::Record;
use crate::store::time::now_rfc3339;
use crate::tools::{Jail, Registry};
use compact::{Compacted, Model, Why};
use model_step::{ModelRequest, TextAs};
use tool_call::Answer;

/// Everything a turn needs besides the session itself.
pub struct TurnContext {
    pub outbox: Outbox,
    pub peer: Peer,
    pub http: reqwest::Client,
    pub config: Arc<Config>,
    pub client: ClientFeatures,
    /// How this turn starts subagents (`None`: it offers no `delegate`, as in a subagent).
    pub host: Option<super::subagent::Host>,
    /// Set when this turn is a subagent's: whose, and how its updates reach the client.
    pub delegation: Option<super::subagent::Delegation>,
}

/// The prompt as the turn receives it.
pub struct UserPrompt {
    /// What the model reads.
    pub text: String,
    /// Images attached to it (stored under `uploads/`).
    pub images: Vec<crate::provider::ImageRef>,
    /// The blocks as the client sent them (replayed as `user_message_chunk`s).
    pub blocks: Vec<acp::ContentBlock>,
    /// The message's id, when the client was already given one (a v2 `session/prompt`'s
    /// answer); otherwise the turn makes one.
    pub message_id: Option<String>,
    /// Told once the message is stored and echoed (a v2 `session/prompt` answers then).
    pub echoed: Option<tokio::sync::oneshot::Sender<()>>,
}

/// Longest session title taken from a first prompt.
const TITLE_CHARS: usize = 80;

/// A title from the first prompt: its first non-empty line, trimmed, at most 80 characters.
pub fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(clip_title(line, TITLE_CHARS))
}

/// `title` cut to `max` characters, with "…" where it was cut.
pub fn clip_title(title: &str, max: usize) -> String {
    let mut clipped: String = title.chars().take(max).collect();
    if title.chars().count() > max {
        clipped.push('…');
    }
    clipped
}

/// One prompt turn of one session.
pub struct Turn {
    /// Holds the session for this turn; released when the turn is dropped.
    claim: TurnClaim,
    session: Arc<Session>,
    number: i64,
    cancel: CancellationToken,
    outbox: Outbox,
    /// The session's editor, every request racing `cancel`.
    editor: EditorClient,
    http: reqwest::Client,
    config: Arc<Config>,
    client: ClientFeatures,
    jail: Jail,
    /// What this turn's model requests used so far (`session/prompt`'s `usage`).
    tokens: std::sync::Mutex<Option<TurnTokens>>,
    host: Option<super::subagent::Host>,
    delegation: Option<super::subagent::Delegation>,
    /// Held while a permission question is out: calls that run at once (`batches`) ask one
    /// at a time, and an "always" answer settles the questions waiting behind it.
    asking: tokio::sync::Mutex<()>,
}

impl Turn {
    pub fn new(claim: TurnClaim, ctx: TurnContext) -> Self {
        let session = claim.session.clone();
        let cancel = claim.cancel.clone();
        let deadlines =
            Deadlines { request: ctx.config.client_request_timeout, question: ctx.config.permission_timeout };
        let asked_as = ctx.delegation.as_ref().map_or(session.id.as_str(), |d| d.editor_session(&session.id));
        let mut editor = EditorClient::new(ctx.peer, asked_as.to_string(), ctx.client, deadlines, cancel.clone());
        if ctx.outbox.is_v2() {
            editor = editor.on_question(state_hook(ctx.outbox.clone(), asked_as.to_string()));
        }
        let jail = Jail::new(session.roots.clone(), ctx.config.forbidden_paths.clone());
        Self {
            number: claim.number as i64,
            claim,
            session,
            cancel,
            outbox: ctx.outbox,
            editor,
            http: ctx.http,
            config: ctx.config,
            client: ctx.client,
            jail,
            tokens: std::sync::Mutex::new(None),
            host: ctx.host,
            delegation: ctx.delegation,
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// Runs the turn to its one stop reason.
    pub async fn run(self, prompt: UserPrompt) -> Result<TurnEnd, AgentError> {
        let command = commands::parse(&prompt.text);
        let user_id = prompt.message_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        match &self.delegation {
            // A subagent's task comes from its parent: a message received from that session.
            Some(d) => self.receive_task(d, &user_id, prompt.blocks).await,
            None => {
                self.store_user_message(&user_id, prompt.blocks).await;
                send_live(&self.outbox, &self.session.id, &Live::State(TurnState::Running)).await;
            }
        }
        if let Some(echoed) = prompt.echoed {
            self.outbox.flush().await;
            let _ = echoed.send(());
        }
        self.announce_title(&prompt.text).await;

        // A panic anywhere in the turn (a bug) fails this turn only: it is stored as failed with
        // a note the user sees, the prompt gets -32603, and the claim is released so the session
        // takes the next prompt. Session state behind a poisoned lock is still usable (plain data).
        let body = AssertUnwindSafe(self.body(command, prompt.text, prompt.images, user_id)).catch_unwind().await;
        let outcome = match body {
            Ok(outcome) => outcome,
            Err(panic) => {
                let what = crate::rpc::panic_message(&panic);
                tracing::error!(session_id = %self.session.id, turn = self.number, panic = %what, "a prompt turn panicked");
                self.say(format!(
                    "\n\n⚠️ Corvid hit an internal error and ended this turn ({what}). You can send another prompt."
                ))
                .await;
                Err(AgentError::internal(format!("session/prompt: the turn failed: {what}")))
            }
        };
        // A cancel that raced the end of the stream still wins: the client was promised `cancelled`.
        let outcome = if self.cancel.is_cancelled() { Ok(StopReason::Cancelled) } else { outcome };
        if let Ok(StopReason::Refusal) = outcome {
            // The protocol says the client drops the refused prompt; so does the model's context.
            let mut state = self.session.state();
            if let Some(pos) = state.history.iter().rposition(|m| m.role == crate::provider::Role::User) {
                state.history.truncate(pos);
            }
        }
        let stop_reason = outcome.as_ref().ok().map(|r| r.as_str().to_string());
        self.outbox
            .push(Record::TurnEnd {
                session_id: self.session.id.clone(),
                turn: self.number,
                status: if outcome.is_ok() { "finished" } else { "failed" },
                stop_reason,
                at: now_rfc3339(),
            })
            .await;
        // Durable, and every frame of this turn handed to the client, before the response.
        self.outbox.flush().await;
        drop(self.claim);
        let tokens = *self.tokens.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        outcome.map(|stop| TurnEnd { stop, tokens })
    }

    /// Adds one model request's reported usage to the turn's.
    fn count_tokens(&self, input: u64, output: u64) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let sum = tokens.get_or_insert_with(TurnTokens::default);
        sum.input += input;
        sum.output += output;
    }

    /// Stores and sends one update of this turn. `false` once the connection is gone. A
    /// subagent's updates are sent only to a client that knows subagents; its tool events also
    /// go to the parent's card.
    async fn emit(&self, event: Event) -> bool {
        let send = match &self.delegation {
            Some(d) => {
                d.tap(&event);
                d.live
            }
            None => true,
        };
        emit(&self.outbox, &self.session, Some(self.number), &event, send).await
    }

    /// A message to the user in the agent's voice (its own message id).
    async fn say(&self, text: String) -> bool {
        self.emit(agent_note(text)).await
    }

    /// The turn proper: a command, or the user's message through the agent loop.
    async fn body(
        &self,
        command: Option<Command>,
        text: String,
        images: Vec<crate::provider::ImageRef>,
        prompt_id: String,
    ) -> Result<StopReason, AgentError> {
        let model = self.session.state().model.clone();
        // The catalog's word on the model, with the window its server reports (asked once).
        let info = self.session.source.discover(&self.http, &model).await;
        let text = match command {
            Some(Command::Compact) => return self.compact(&model, &info).await,
            // A command becomes the instruction it stands for; the client still shows what was typed.
            Some(Command::Prompt(instruction)) => instruction,
            None => text,
        };
        // Which background commands run is said here, at the end of the conversation, not in
        // the system prompt, whose unchanged prefix providers cache.
        let text = match self.session.background.report() {
            Some(report) => format!("{text}\n\n{report}"),
            None => text,
        };
        let mut user_message = ChatMessage::user(text);
        user_message.images = images;
        user_message.prompt_id = Some(prompt_id);
        record_message(&self.outbox, &self.session, &user_message).await;
        let mut messages = {
            let mut state = self.session.state();
            state.history.push(user_message);
            state.history.clone()
        };
        messages.insert(0, self.system_message(&info).await);
        self.agent_loop(&model, &info, messages).await
    }

    /// The system prompt of this turn's requests (a subagent's says it is one).
    async fn system_message(&self, info: &crate::catalog::ModelInfo) -> ChatMessage {
        let environment = self.session.environment().await;
        let mut system = self.session.system_prompt(info, environment, self.config.file.as_deref());
        if self.delegation.is_some() {
            system.push_str(delegate::SUBAGENT_NOTE);
        }
        ChatMessage::system(system)
    }

    /// The first prompt of a session names it.
    async fn announce_title(&self, text: &str) {
        let title = {
            let mut state = self.session.state();
            if state.title.is_some() {
                return;
            }
            let Some(title) = title_from(text) else { return };
            state.title = Some(title.clone());
            title
        };
        self.outbox.push(Record::Title { session_id: self.session.id.clone(), title: title.clone() }).await;
        self.emit(Event::SessionInfo { title, updated_at: now_rfc3339() }).await;
    }

    /// The tools this turn offers `model`: the built-ins the session's agent alias enables, and
    /// its MCP servers' tools. `apply_patch` goes only to GPT-family models (the catalog's
    /// family), which are trained on its patch language; the others edit with `edit_file`.
    fn registry(&self, model: &crate::catalog::ModelInfo) -> Registry {
        let mut extra = self.session.mcp.get().map(|m| m.tools()).unwrap_or_default();
        let delegates = self.host.as_ref().is_some_and(|h| h.slots().limit() > 0);
        if delegates && self.session.tool_enabled(crate::tools::delegate::NAME) {
            extra.insert(0, Arc::new(crate::tools::delegate::Delegate));
        }
        let patches = model.family == crate::catalog::Family::Gpt;
        Registry::new(
            |name| self.session.tool_enabled(name) && (patches || name != crate::tools::apply_patch::NAME),
            extra,
        )
    }

    /// Model → tool calls → results → model … until the model stops asking for tools. Before
    /// each request the context is compacted if it would not fit the window; a request the
    /// provider still finds too long is compacted and sent once more.
    async fn agent_loop(
        &self,
        model: &str,
        info: &crate::catalog::ModelInfo,
        mut messages: Vec<ChatMessage>,
    ) -> Result<StopReason, AgentError> {
        let registry = self.registry(info);
        let specs = registry.specs();
        let specs_bytes = compaction::specs_bytes(&specs);
        let mut calls_made = 0u32;
        let mut loop_guard = batches::LoopGuard::default();
        // Whether the request about to be sent was already compacted after a context error.
        let mut retried_overflow = false;
        for _request in 0..self.config.max_turn_requests {
            self.take_in_steering(&mut messages).await;
            let spent = self.session.state().spent;
            if let Some(why) = accounting::exhausted(spent, &self.config, info.prices.as_ref()) {
                self.say(why).await;
                return Ok(StopReason::MaxTokens);
            }
            let window = self.window(info);
            if !retried_overflow && compaction::estimate(&window, &messages, specs_bytes) > window.trigger() {
                let compacted =
                    self.compact_context(Why::Threshold, Model { id: model, info }, &mut messages, &specs).await?;
                if compacted == Compacted::Cancelled {
                    return Ok(StopReason::Cancelled);
                }
            }
            let request_tokens = compaction::estimate(&window, &messages, specs_bytes);
            let max_output_tokens = window.answer_room(info.max_output_tokens, request_tokens);
            let mut text = String::new();
            let request = ModelRequest {
                model,
                info,
                max_output_tokens,
                messages: &messages,
                specs: &specs,
                text_as: TextAs::Message,
            };
            let step = match self.model_step(request, &mut text).await {
                Ok(Some(step)) => step,
                Err(AgentError::Provider(ProviderError::ContextTooLong { limit, .. })) if !retried_overflow => {
                    // The window is smaller than we thought: remember what the provider said (or
                    // a little less than what it refused), compact, and send once more.
                    retried_overflow = true;
                    self.learn_window(limit.unwrap_or(request_tokens * 9 / 10));
                    let compacted =
                        self.compact_context(Why::Overflow, Model { id: model, info }, &mut messages, &specs).await?;
                    if compacted == Compacted::Cancelled {
                        return Ok(StopReason::Cancelled);
                    }
                    continue;
                }
                other => {
                    // Keep what the user saw in the context, even for a cancelled or failed turn.
                    if !text.is_empty() {
                        self.remember(&mut messages, ChatMessage::assistant(text, Vec::new())).await;
                    }
                    return other.map(|_| StopReason::Cancelled);
                }
            };
            retried_overflow = false;
            if let Some(ratio) = step
                .input_tokens
                .and_then(|t| compaction::calibrate(t, compaction::request_bytes(&messages, specs_bytes)))
            {
                self.session.state().fit.tokens_per_byte = ratio;
            }
            let mut assistant = ChatMessage::assistant(text, step.tool_calls.clone());
            assistant.thinking = step.thinking;
            if !assistant.content.is_empty() || !assistant.tool_calls.is_empty() {
                self.remember(&mut messages, assistant).await;
            }
            if step.tool_calls.is_empty() {
                let finished = !matches!(step.finish, Some(FinishReason::Length | FinishReason::ContentFilter));
                if finished && self.session.has_steering() {
                    // A message sent while the model was answering: the turn goes on to read it.
                    continue;
                }
                return Ok(match step.finish {
                    Some(FinishReason::Length) => StopReason::MaxTokens,
                    Some(FinishReason::ContentFilter) => StopReason::Refusal,
                    _ => StopReason::EndTurn,
                });
            }
            let mut cancelled = false;
            for batch in batches::batches(&step.tool_calls, &registry) {
                let first = calls_made + 1;
                calls_made += batch.len() as u32;
                let results = if cancelled {
                    batch.iter().map(|_| None).collect()
                } else {
                    // A batch's calls run at once (see `batches`); the answers keep the order.
                    let calls = batch
                        .iter()
                        .zip(first..)
                        .map(|(call, n)| self.tool_call(&registry, n, call, loop_guard.refuses(call)));
                    futures_util::future::join_all(calls).await
                };
                for (call, result) in batch.iter().zip(results) {
                    let answer = match result {
                        Some(answer) => {
                            loop_guard.record(call, answer.failed, &registry);
                            answer
                        }
                        None if cancelled => Answer::cancelled("cancelled by the user before it ran"),
                        None => {
                            cancelled = true;
                            Answer::cancelled("cancelled by the user")
                        }
                    };
                    // Every tool call gets an answer, or the provider rejects the next request.
                    let mut message = ChatMessage::tool_result(call.id.clone(), answer.text);
                    message.images = answer.images;
                    self.remember(&mut messages, message).await;
                }
            }
            if cancelled {
                return Ok(StopReason::Cancelled);
            }
        }
        Ok(StopReason::MaxTurnRequests)
    }

    /// The messages sent into the turn since its last model request (`_session/steering`):
    /// each is stored as a user message where it landed (replayed there; not sent live, the
    /// client has it, as with a prompt), joins the context, and its request is answered once
    /// that is durable: the answer is the client's sign that the model reads it.
    async fn take_in_steering(&self, messages: &mut Vec<ChatMessage>) {
        for steer in self.session.take_steering() {
            let message_id = steer.prompt.message_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            self.store_user_message(&message_id, steer.prompt.blocks).await;
            let mut message = ChatMessage::user(steer.prompt.text);
            message.images = steer.prompt.images;
            self.remember(messages, message).await;
            self.outbox.flush().await;
            let _ = steer.taken.send(());
        }
    }

    /// Stores a user message as its blocks (replayed as `user_message_chunk`s; a v1 client has
    /// it already, so nothing is sent), and echoes it whole to a v2 client (`user_message`).
    async fn store_user_message(&self, message_id: &str, blocks: Vec<acp::ContentBlock>) {
        let echo = self.outbox.is_v2().then(|| blocks.clone());
        for block in blocks {
            let chunk = Event::UserChunk { message_id: message_id.to_string(), content: block };
            emit(&self.outbox, &self.session, Some(self.number), &chunk, false).await;
        }
        if let Some(blocks) = echo {
            send_live(
                &self.outbox,
                &self.session.id,
                &Live::UserMessage { message_id: message_id.to_string(), blocks },
            )
            .await;
        }
    }

    /// A window the provider revealed by refusing a longer request: the session's requests
    /// are sized to it from now on.
    fn learn_window(&self, tokens: u64) {
        let mut state = self.session.state();
        let known = state.fit.learned_window.unwrap_or(u64::MAX);
        state.fit.learned_window = Some(tokens.min(known).max(1024));
        tracing::info!(session_id = %self.session.id, window = tokens, "the provider refused a request as too long");
    }

    /// Appends to the model context, in memory and in the store.
    async fn remember(&self, messages: &mut Vec<ChatMessage>, message: ChatMessage) {
        record_message(&self.outbox, &self.session, &message).await;
        self.session.state().history.push(message.clone());
        messages.push(message);
    }
}

/// The v2 turn states a permission question moves the session through (`requires_action` while
/// it waits, `running` once answered), in order with the turn's updates.
fn state_hook(outbox: Outbox, session_id: String) -> crate::editor::QuestionHook {
    std::sync::Arc::new(move |asking| {
        let (outbox, session_id) = (outbox.clone(), session_id.clone());
        Box::pin(async move {
            let state = if asking { TurnState::RequiresAction } else { TurnState::Running };
            send_live(&outbox, &session_id, &Live::State(state)).await;
            outbox.flush().await;
        })
    })
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
