//! One tool call of a turn: announce its card, work out what it would change, ask if it must,
//! run it, and report how it ended. Reject is not cancel: a rejected call goes back to the
//! model as declined; a cancel (or a `cancelled` answer) ends the turn.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::Turn;
use crate::agent::modes::Mode;
use crate::agent::permission::{self, Decision, Question};
use crate::agent::session::Stoppable;
use crate::event::{Event, PlanItem, Terminal, ToolContent, ToolKind, ToolPatch, ToolStart, ToolStatus};
use crate::provider::ToolCallRequest;
use crate::sandbox::Confinement;
use crate::tools::review;
use crate::tools::{Announce, Needs, Registry, TerminalFeed, Tool, ToolContext, ToolError, Updates};

/// The client's card of one call, as the running tool sees it.
struct Card<'a> {
    turn: &'a Turn,
    id: &'a str,
    /// The ids of the terminals it has shown: they stay on the card when a cancel ends the call.
    terminals: std::sync::Mutex<Vec<String>>,
}

impl Card<'_> {
    fn terminals(&self) -> Vec<ToolContent> {
        let ids = self.terminals.lock().map(|t| t.clone()).unwrap_or_default();
        ids.into_iter().map(ToolContent::Terminal).collect()
    }
}

impl Updates for Card<'_> {
    fn show(&self, content: Vec<ToolContent>, on_screen: bool) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Ok(mut terminals) = self.terminals.lock() {
                for c in &content {
                    if let ToolContent::Terminal(id) = c
                        && !terminals.contains(id)
                    {
                        terminals.push(id.clone());
                    }
                }
            }
            self.turn.tool_update(ToolPatch::new(self.id).content(content)).await;
            if on_screen {
                self.turn.outbox.flush().await;
            }
        })
    }

    /// A client that advertises `plan` gets plan operations on the session's one plan (an
    /// empty checklist removes it); others get the whole plan, as before.
    fn plan(&self, plan: Vec<PlanItem>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let event = if !self.turn.client.plan {
                Event::Plan(plan)
            } else if plan.is_empty() {
                Event::PlanRemoved { plan_id: self.turn.plan_id() }
            } else {
                Event::PlanUpdate { plan_id: self.turn.plan_id(), items: plan }
            };
            self.turn.emit(event).await;
        })
    }

    fn terminal(&self, update: Terminal) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.turn.emit(Event::Terminal(update)).await;
        })
    }

    /// A child of the call's own token would end the call; the command's is separate.
    fn cancellable_terminal(&self, terminal_id: &str) -> CancellationToken {
        let stop = CancellationToken::new();
        self.turn.session.running(Stoppable::Terminal(terminal_id.to_string()), stop.clone());
        stop
    }

    fn terminal_ended(&self, terminal_id: &str) {
        self.turn.session.finished(&Stoppable::Terminal(terminal_id.to_string()));
    }

    fn background_terminal(&self, terminal_id: &str, stop: &CancellationToken) -> Arc<dyn TerminalFeed> {
        self.turn.session.running(Stoppable::Terminal(terminal_id.to_string()), stop.clone());
        Arc::new(SessionTerminal {
            id: terminal_id.to_string(),
            outbox: self.turn.outbox.clone(),
            session: self.turn.session.clone(),
            send: self.turn.delegation.as_ref().is_none_or(|d| d.live),
        })
    }
}

/// A background command's agent-owned terminal: its updates are the session's, stored and
/// sent outside any turn (the command outlives the call, and the turn).
struct SessionTerminal {
    id: String,
    outbox: crate::agent::outbox::Outbox,
    session: Arc<crate::agent::session::Session>,
    /// Whether the client sees them (a subagent's, only when it knows subagents).
    send: bool,
}

impl TerminalFeed for SessionTerminal {
    fn id(&self) -> &str {
        &self.id
    }

    fn send(&self, update: Terminal) -> BoxFuture<'static, ()> {
        let (outbox, session, send) = (self.outbox.clone(), self.session.clone(), self.send);
        Box::pin(async move {
            crate::agent::outbox::emit(&outbox, &session, None, &Event::Terminal(update), send).await;
        })
    }

    fn ended(&self) {
        self.session.finished(&Stoppable::Terminal(self.id.clone()));
    }
}

/// What the model reads of one call: its text, and the images that go with it; and whether
/// the call failed (for [`super::batches::LoopGuard`]).
pub(super) struct Answer {
    pub text: String,
    pub images: Vec<crate::provider::ImageRef>,
    pub failed: bool,
}

impl Answer {
    fn failed(text: String) -> Self {
        Self { text, images: Vec::new(), failed: true }
    }

    /// The answer to a call the user's cancel stopped or kept from running.
    pub(super) fn cancelled(text: &str) -> Self {
        Self { text: text.to_string(), images: Vec::new(), failed: false }
    }
}

/// What the card of a call the user's cancel ended says, by how far it got.
const CANCELLED_BEFORE: &str = "Cancelled by the user before it ran.";
const CANCELLED_WHILE: &str = "Cancelled by the user while it ran.";
const CANCELLED_COMMAND: &str = "Cancelled by the user while it ran: the command was stopped.";

/// The last word on a call the user's cancel ended (every client's card must end; stored, so
/// a replay ends it too). The terminals it showed stay: they hold what the command wrote.
fn cancelled(id: &str, message: &str, terminals: Vec<ToolContent>) -> ToolPatch {
    let mut content = vec![ToolContent::Text(message.to_string())];
    content.extend(terminals);
    ToolPatch::new(id)
        .status(ToolStatus::Failed)
        .content(content)
        .raw_output(serde_json::json!({ "error": message, "cancelled": true }))
}

fn failed(id: &str, message: &str) -> ToolPatch {
    ToolPatch::new(id)
        .status(ToolStatus::Failed)
        .content(vec![ToolContent::Text(message.to_string())])
        .raw_output(serde_json::json!({ "error": message }))
}

impl Turn {
    /// Where this session's long tool outputs are saved (absolute: the model reads the path).
    fn outputs_dir(&self) -> std::path::PathBuf {
        let data_dir = std::path::absolute(&self.config.data_dir).unwrap_or_else(|_| self.config.data_dir.clone());
        crate::tools::cap::outputs_dir(&data_dir, &self.session.id)
    }

    /// The instruction files of folders this call reached for the first time in the session,
    /// as text to append to its result.
    fn nested_instructions(&self, locations: &[crate::event::Location]) -> String {
        let found: Vec<_> = locations.iter().flat_map(|l| self.session.new_instructions(&l.path)).collect();
        crate::agent::instructions::attach(&found)
    }

    /// The id of the session's plan: one per session, the same across turns and restores.
    fn plan_id(&self) -> String {
        format!("{}/plan", self.session.id)
    }

    async fn tool_update(&self, patch: ToolPatch) -> bool {
        self.emit(Event::ToolChanged(patch)).await
    }

    /// Marks the card failed; the model reads the same message.
    async fn fail(&self, id: &str, error: &ToolError) -> Option<Answer> {
        let message = error.to_string();
        self.tool_update(failed(id, &message)).await;
        Some(Answer::failed(format!("error: {message}")))
    }

    /// Announces, authorizes and runs the `n`th call of the turn (a `refused` one fails at
    /// once: the model keeps repeating it). Returns what the model reads, or `None` if the user
    /// cancelled the turn.
    pub(super) async fn tool_call(
        &self,
        registry: &Registry,
        n: u32,
        call: &ToolCallRequest,
        refused: bool,
    ) -> Option<Answer> {
        // The model's ids may repeat across requests (some servers number them per response),
        // so the client sees ids of our own, unique in the session.
        // A subagent's ids carry its parent card's, so they are unique on the parent's stream too.
        let prefix = self.delegation.as_ref().map_or("", |d| d.call_prefix.as_str());
        let id = format!("{prefix}t{}-{n}", self.number);
        let name = call.function.name.as_str();
        let parsed = serde_json::from_str::<serde_json::Value>(&call.function.arguments);
        let args = parsed.as_ref().cloned().unwrap_or(serde_json::Value::Null);
        let tool = registry.get(name);
        let announced = match (&parsed, tool) {
            (Err(e), _) => Err(ToolError::Arguments { tool: name.to_string(), reason: format!("not valid JSON: {e}") }),
            (Ok(_), None) => Err(ToolError::Unknown(name.to_string())),
            (Ok(_), Some(tool)) => tool.announce(&args, &self.jail),
        };
        let (title, kind, locations) = match &announced {
            Ok(a) => (a.title.clone(), a.kind, a.locations.clone()),
            Err(_) => (name.to_string(), ToolKind::Other, vec![]),
        };
        let card =
            ToolStart { id: id.clone(), name: name.to_string(), title, kind, locations, raw_input: args.clone() };
        self.emit(Event::ToolStarted(card)).await;
        if refused {
            self.tool_update(failed(&id, super::batches::REPEATED)).await;
            return Some(Answer::failed(super::batches::REPEATED.to_string()));
        }
        let (tool, announce) = match (tool, announced) {
            (Some(tool), Ok(announce)) => (tool, announce),
            (_, Err(e)) => return self.fail(&id, &e).await,
            (None, Ok(_)) => return self.fail(&id, &ToolError::Unknown(name.to_string())).await,
        };
        let mut announce = tool.assess(announce, &self.cancel).await;
        let updates = Card { turn: self, id: &id, terminals: Default::default() };
        let uploads = self.config.data_dir.join("uploads");
        let outputs = self.outputs_dir();
        // Built for each call: the session's mode (read-only confines commands further) may
        // change between calls.
        let read_only = self.session.state().mode == Mode::ReadOnly;
        let sandbox = Confinement::for_session(&self.config, &self.session.roots, &self.session.id, read_only);
        if let Needs::Escalated { command, escalation } = &announce.needs
            && !sandbox.lifts(*escalation)
        {
            // Nothing to lift (the sandbox is off, or already allows it): an ordinary command.
            announce.needs = Needs::Command(command.clone());
        }
        if matches!(announce.needs, Needs::Command(_) | Needs::Escalated { .. }) {
            self.tell_if_unconfined(&sandbox).await;
        }
        let cx = ToolContext {
            call_id: &id,
            jail: &self.jail,
            editor: &self.editor,
            updates: &updates,
            cancel: &self.cancel,
            uploads: &uploads,
            outputs: &outputs,
            sandbox: &sandbox,
            needs: &announce.needs,
            background: &self.session.background,
            part: None,
        };
        let part = match self.authorize(tool.as_ref(), &announce, &args, &cx).await {
            Ok(Decision::Allow) => None,
            Ok(Decision::AllowPart(part)) => Some(part),
            Ok(Decision::Cancelled) | Err(ToolError::Cancelled) => {
                self.tool_update(cancelled(&id, CANCELLED_BEFORE, Vec::new())).await;
                return None;
            }
            Ok(Decision::Reject(reason)) => {
                self.tool_update(failed(&id, &format!("Not run: {reason}."))).await;
                return Some(Answer::failed(format!(
                    "The user declined this tool call ({reason}). Do not retry it unchanged; ask or try another way."
                )));
            }
            Err(e) => return self.fail(&id, &e).await,
        };
        // The call's own token: the turn's cancel stops it, and so does a `tool_call/cancel` of
        // this call alone (registered while it runs), after which the turn goes on.
        let stop = self.cancel.child_token();
        self.session.running(Stoppable::Call(id.clone()), stop.clone());
        let result =
            if !tool.waits_for_user() && !self.tool_update(ToolPatch::new(&id).status(ToolStatus::Running)).await {
                Err(ToolError::Cancelled)
            } else {
                let cx = ToolContext { cancel: &stop, part: part.as_ref(), ..cx };
                if name == crate::tools::delegate::NAME {
                    self.delegate(&args, &cx).await
                } else {
                    tool.run(&args, &cx).await
                }
            };
        self.session.finished(&Stoppable::Call(id.clone()));
        let command = matches!(announce.needs, Needs::Command(_) | Needs::Escalated { .. });
        let while_running = if command { CANCELLED_COMMAND } else { CANCELLED_WHILE };
        if self.cancel.is_cancelled() {
            self.tool_update(cancelled(&id, while_running, updates.terminals())).await;
            return None;
        }
        if stop.is_cancelled() {
            const STOPPED: &str = "Stopped by the user before it finished";
            // An agent-owned terminal stays on the card: it holds what the command wrote.
            let mut content = vec![ToolContent::Text(format!("{STOPPED}."))];
            if let Ok(output) = &result {
                content.extend(output.content.iter().filter(|c| matches!(c, ToolContent::Terminal(_))).cloned());
            }
            let patch = ToolPatch::new(&id)
                .status(ToolStatus::Failed)
                .content(content)
                .raw_output(serde_json::json!({ "error": STOPPED, "stopped": true }));
            self.tool_update(patch).await;
            return Some(Answer::failed(format!(
                "The user stopped this tool call before it finished ({STOPPED}). Do not run it again unless asked; \
                 go on with the task another way or say what you need."
            )));
        }
        if matches!(result, Err(ToolError::Cancelled)) {
            // The tool's own wait was cancelled (a `cancelled` answer to its question): that
            // ends the turn, as a cancelled permission question does.
            self.cancel.cancel();
            self.tool_update(cancelled(&id, while_running, updates.terminals())).await;
            return None;
        }
        match result {
            Ok(output) => {
                let failed = !output.ok;
                let status = if output.ok { ToolStatus::Completed } else { ToolStatus::Failed };
                self.tool_update(ToolPatch::new(&id).status(status).content(output.content).raw_output(output.raw))
                    .await;
                // What the model reads is capped (the whole saved beside), and carries the
                // instruction files of folders it reached for the first time.
                let mut for_model = match tool.pages_itself() {
                    true => output.for_model,
                    false => crate::tools::cap::for_model(output.for_model, &outputs, &id),
                };
                for_model.push_str(&self.nested_instructions(&announce.locations));
                // A background command that ended meanwhile (a server that crashed) is news.
                if let Some(news) = self.session.background.news() {
                    for_model.push_str("\n\n");
                    for_model.push_str(&news);
                }
                Some(Answer { text: for_model, images: output.images, failed })
            }
            Err(e) => self.fail(&id, &e).await,
        }
    }

    /// Once per session, before its first command: a notice that commands run unconfined
    /// although the sandbox is not off (no Landlock, no launcher), or are refused.
    async fn tell_if_unconfined(&self, sandbox: &Confinement) {
        let (title, description) = match sandbox {
            Confinement::Unconfined { off: false, reason } => (
                "Commands run without the sandbox",
                format!(
                    "{reason}. Commands the model runs can write anywhere you can and reach the network. \
                     Set [sandbox] required = true in Corvid's config to refuse them instead."
                ),
            ),
            Confinement::Sandboxed(_) if crate::sandbox::landlock_abi().is_none() => (
                "Commands run without Landlock",
                "This kernel does not support Landlock, so commands the model runs can write anywhere you can; \
                 only the network filter holds. Set [sandbox] required = true in Corvid's config to refuse them instead."
                    .to_string(),
            ),
            Confinement::Refused(reason) => (
                "Commands are refused",
                format!("{reason}. [sandbox] required = true, so Corvid runs no commands here."),
            ),
            _ => return,
        };
        if self.session.unconfined_told.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        self.emit(Event::Notice { title: title.to_string(), description }).await;
    }

    /// Whether the call may run. When the user is to be asked, tools that change something
    /// preview it first (an edit that cannot apply fails here, without bothering the user) and
    /// the question shows the preview.
    async fn authorize(
        &self,
        tool: &dyn Tool,
        announce: &Announce,
        args: &serde_json::Value,
        cx: &ToolContext<'_>,
    ) -> Result<Decision, ToolError> {
        // The card is on screen before the question, and before any request the tool makes of
        // the editor (a read through `fs/read_text_file` must not overtake its own card).
        self.outbox.flush().await;
        // Settled by the mode or a rule: the tool's run will find what its preview would.
        if let Some(decision) = permission::settled(&self.session, tool.name(), &announce.needs) {
            return Ok(decision);
        }
        let _asking = tokio::select! {
            guard = self.asking.lock() => guard,
            () = self.cancel.cancelled() => return Ok(Decision::Cancelled),
        };
        let preview = tool.preview(args, cx).await?;
        let subagent = self.delegation.as_ref().map(|d| d.title.as_str());
        let reviewed = if tool.writes_in_part() { review::offered(&preview) } else { None };
        let question = Question { tool: tool.name(), call_id: cx.call_id, announce, args, preview, subagent, reviewed };
        let (decision, note) = permission::decide(&self.session, question, &self.editor, &self.outbox).await;
        if let Some(note) = note {
            self.say(format!("\n\n{note}\n\n")).await;
        }
        Ok(decision)
    }
}
