//! A live session: its roots, model choice, context, and the turn running in it (if any).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use std::path::Path;

use super::instructions::{self, environment::Environment};
use super::model_source::ModelSource;
use super::modes::Mode;
use crate::agent::error::AgentError;
use crate::catalog::ModelInfo;
use crate::event::{Choice, ConfigCategory, ConfigSelect};
use crate::provider::{ChatMessage, anthropic};
use crate::roots::Roots;
use crate::sandbox::Status;

pub struct Session {
    pub id: String,
    /// The cwd and additional directories (canonical): the bound for file tools.
    pub roots: Roots,
    pub source: Arc<ModelSource>,
    /// The agent alias the session runs as, with its profile (`None`: plain configuration).
    pub agent: Option<(String, crate::config::AgentProfile)>,
    /// Next ledger sequence number.
    next_seq: AtomicI64,
    /// Signalled whenever a turn ends (for `session/stop`).
    pub idle: tokio::sync::Notify,
    state: Mutex<SessionState>,
    /// The MCP servers the client attached to this session (set once, before it is shared).
    pub mcp: std::sync::OnceLock<Arc<crate::mcp::McpServers>>,
    /// What confines the session's commands (the mode descriptions say it).
    pub sandbox: Status,
    /// Whether the user has been told that commands run unconfined (once per session).
    pub unconfined_told: AtomicBool,
    /// For a subagent's session: the session that started it (see `agent::subagent`).
    pub parent: Option<String>,
    /// What the system prompt says of the machine, gathered at the session's first turn.
    environment: tokio::sync::OnceCell<Environment>,
    /// Instruction files below the cwd already brought to the model (once per session).
    instructions_seen: Mutex<std::collections::HashSet<std::path::PathBuf>>,
    /// Commands the model left running (`run_command` with `background`); they end with the
    /// session ([`Sessions::remove`], [`Sessions::cancel_all`]).
    pub background: crate::tools::BackgroundCommands,
}

pub struct SessionState {
    pub model: String,
    /// The model's context: every user and assistant message so far.
    pub history: Vec<ChatMessage>,
    /// Next sequence number in the stored model context.
    pub next_message_seq: i64,
    pub title: Option<String>,
    /// The client's `systemPrompt` text, appended to Corvid's (see `system_prompt`).
    pub client_prompt: Option<String>,
    /// Permission mode.
    pub mode: Mode,
    /// Extended-thinking level (see `anthropic::THOUGHT_LEVELS`); used only where offered.
    pub thought_level: String,
    /// "Always" answers for this session.
    pub rules: Vec<super::modes::Rule>,
    /// What the session has used so far, for `usage_update` and the budgets.
    pub spent: Spent,
    /// What the session learned of how its context fits the model's window.
    pub fit: Fit,
    turn: Option<RunningTurn>,
    /// Messages sent into the running turn, waiting for its next model request.
    steering: Vec<super::steering::Steer>,
    /// What can be stopped alone while it runs: tool calls (v2's `tool_call/cancel`, by card
    /// id) and the commands of agent-owned terminals (`terminal/cancel`, by terminal id).
    stoppable: Vec<(Stoppable, CancellationToken)>,
    next_turn: u64,
}

/// Something running in a session that a client may stop on its own, the turn going on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stoppable {
    /// A tool call, by its card's id.
    Call(String),
    /// The command of an agent-owned terminal, by the terminal's id.
    Terminal(String),
}

/// Where a restored session picks up.
pub struct Restored {
    pub model: String,
    pub history: Vec<ChatMessage>,
    pub title: Option<String>,
    pub client_prompt: Option<String>,
    pub next_seq: i64,
    pub next_message_seq: i64,
    pub next_turn: u64,
    pub mode: Mode,
    pub thought_level: String,
    pub spent: Spent,
}

/// How the session's context fits the model's window, as its requests taught it: a smaller
/// window a provider's context-length error revealed, and the provider's tokens per byte of
/// request (`agent::compaction::calibrate`). Kept in memory: a restored session learns again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub learned_window: Option<u64>,
    pub tokens_per_byte: f64,
}

impl Default for Fit {
    fn default() -> Self {
        Self { learned_window: None, tokens_per_byte: super::compaction::DEFAULT_TOKENS_PER_BYTE }
    }
}

/// A session's spending: tokens summed over every model request, and their cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub tokens: u64,
    pub cost: f64,
}

struct RunningTurn {
    number: u64,
    cancel: CancellationToken,
}

impl Session {
    pub fn new(
        id: String,
        roots: Roots,
        source: Arc<ModelSource>,
        agent: Option<(String, crate::config::AgentProfile)>,
        sandbox: Status,
    ) -> Self {
        let model = source.default_model.clone();
        let fresh = Restored {
            model,
            history: Vec::new(),
            title: None,
            client_prompt: None,
            next_seq: 1,
            next_message_seq: 1,
            next_turn: 1,
            mode: agent
                .as_ref()
                .and_then(|(_, p)| p.default_mode.as_deref())
                .and_then(Mode::from_id)
                .unwrap_or_default(),
            spent: Spent::default(),
            thought_level: DEFAULT_THOUGHT_LEVEL.to_string(),
        };
        Self::restore(id, roots, (source, agent), sandbox, fresh)
    }

    /// `model`: where its models come from, and the agent alias it runs as.
    pub fn restore(
        id: String,
        roots: Roots,
        model: (Arc<ModelSource>, Option<(String, crate::config::AgentProfile)>),
        sandbox: Status,
        r: Restored,
    ) -> Self {
        let (source, agent) = model;
        // Files a stored tool result already brought are not brought again.
        let seen = r
            .history
            .iter()
            .filter(|m| m.role == crate::provider::Role::Tool)
            .flat_map(|m| instructions::attached_in(&m.content).collect::<Vec<_>>())
            .collect();
        Self {
            id,
            roots,
            source,
            agent,
            next_seq: AtomicI64::new(r.next_seq),
            idle: tokio::sync::Notify::new(),
            mcp: std::sync::OnceLock::new(),
            sandbox,
            unconfined_told: AtomicBool::new(false),
            parent: None,
            environment: tokio::sync::OnceCell::new(),
            instructions_seen: Mutex::new(seen),
            background: crate::tools::BackgroundCommands::default(),
            state: Mutex::new(SessionState {
                model: r.model,
                history: r.history,
                next_message_seq: r.next_message_seq,
                title: r.title,
                client_prompt: r.client_prompt,
                mode: r.mode,
                thought_level: r.thought_level,
                rules: Vec::new(),
                spent: r.spent,
                fit: Fit::default(),
                turn: None,
                steering: Vec::new(),
                stoppable: Vec::new(),
                next_turn: r.next_turn,
            }),
        }
    }

    /// The environment facts of the system prompt: gathered once, at the first turn (off the
    /// async threads: `git status` runs), and the same for every request after.
    pub async fn environment(&self) -> &Environment {
        self.environment
            .get_or_init(|| async {
                let roots = self.roots.clone();
                tokio::task::spawn_blocking(move || Environment::gather(&roots)).await.unwrap_or_else(|_| Environment {
                    os: std::env::consts::OS.to_string(),
                    shell: "sh".into(),
                    date: "unknown".into(),
                    time_zone: "unknown".into(),
                    git: None,
                })
            })
            .await
    }

    /// Corvid's system prompt for `model` (guidance, environment, mode, instruction files),
    /// then the agent alias's own, then the client's `systemPrompt`, each where set.
    /// `config_file`: where Corvid's config is (the user's own AGENTS.md sits beside it).
    pub fn system_prompt(&self, model: &ModelInfo, environment: &Environment, config_file: Option<&Path>) -> String {
        let mode = self.state().mode;
        let parts = instructions::Parts {
            roots: &self.roots,
            model,
            environment,
            mode: format!("{}: {}", mode.name(), mode.description(&self.sandbox)),
            user_file: instructions::files::user_file(config_file),
        };
        let mut prompt = instructions::system_prompt(parts);
        let client = self.state().client_prompt.clone();
        let alias = self.agent.as_ref().and_then(|(_, p)| p.system_prompt.as_deref());
        for extra in [alias, client.as_deref()].into_iter().flatten() {
            prompt.push_str("\n\n");
            prompt.push_str(extra);
        }
        prompt
    }

    /// The instruction files over `path` (below the cwd or in another root) not yet brought to
    /// the model; they count as brought once returned.
    pub fn new_instructions(&self, path: &Path) -> Vec<instructions::files::InstructionFile> {
        let folders = instructions::files::folders_over(path, &self.roots);
        if folders.is_empty() {
            return Vec::new();
        }
        let found: Vec<_> = folders.iter().filter_map(|d| instructions::files::in_folder(d)).collect();
        let mut seen = self.instructions_seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        found.into_iter().filter(|f| seen.insert(f.path.clone())).collect()
    }

    /// Whether the alias's `tools` list (if any) enables `tool`.
    pub fn tool_enabled(&self, tool: &str) -> bool {
        match self.agent.as_ref().and_then(|(_, p)| p.tools.as_ref()) {
            Some(tools) => tools.iter().any(|t| t == tool),
            None => true,
        }
    }

    /// Claims the next ledger sequence number.
    pub fn take_seq(&self) -> i64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The next ledger sequence number, without claiming it.
    pub fn peek_seq(&self) -> i64 {
        self.next_seq.load(Ordering::Relaxed)
    }

    pub fn is_busy(&self) -> bool {
        self.state().turn.is_some()
    }

    /// The session state. A poisoned lock (a panic mid-update) still yields the state: the
    /// data is plain and the turn that panicked is reported as failed on its own.
    pub fn state(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Claims the session for a new turn, or reports it busy. The returned guard releases
    /// the claim when dropped, however the turn ends.
    pub fn begin_turn(self: &Arc<Self>, cancel: CancellationToken) -> Result<TurnClaim, AgentError> {
        let mut state = self.state();
        if state.turn.is_some() {
            return Err(AgentError::SessionBusy(self.id.clone()));
        }
        let number = state.next_turn;
        state.next_turn += 1;
        state.turn = Some(RunningTurn { number, cancel: cancel.clone() });
        Ok(TurnClaim { session: self.clone(), number, cancel })
    }

    pub fn turn_running(&self) -> bool {
        self.state().turn.is_some()
    }

    /// Queues a message for the running turn, returning that turn's cancellation; handed back
    /// when no turn runs.
    pub fn steer(&self, steer: super::steering::Steer) -> Result<CancellationToken, super::steering::Steer> {
        let mut state = self.state();
        let Some(turn) = &state.turn else { return Err(steer) };
        let cancel = turn.cancel.clone();
        state.steering.push(steer);
        Ok(cancel)
    }

    /// The messages sent into the running turn so far, in order.
    pub fn take_steering(&self) -> Vec<super::steering::Steer> {
        std::mem::take(&mut self.state().steering)
    }

    /// Registers a running tool call or terminal command that `stop` may stop (until `finished`).
    pub fn running(&self, what: Stoppable, stop: CancellationToken) {
        self.state().stoppable.push((what, stop));
    }

    pub fn finished(&self, what: &Stoppable) {
        self.state().stoppable.retain(|(running, _)| running != what);
    }

    /// Stops one running tool call or command; `false` if there is none such.
    pub fn stop(&self, what: &Stoppable) -> bool {
        let state = self.state();
        let Some((_, stop)) = state.stoppable.iter().find(|(running, _)| running == what) else { return false };
        stop.cancel();
        true
    }

    pub fn has_steering(&self) -> bool {
        !self.state().steering.is_empty()
    }

    /// Cancels the running turn, if any. Returns whether there was one.
    pub fn cancel_turn(&self) -> bool {
        match &self.state().turn {
            Some(t) => {
                t.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether the current model gets a thought level picker, per the model catalog: models
    /// that take a thinking budget on Anthropic's API, or a reasoning effort on OpenAI's.
    pub fn offers_thought_level(&self, model: &str) -> bool {
        let info = self.source.model_info(model);
        info.takes_thinking_budget(self.source.endpoint.kind) || self.takes_effort(&info)
    }

    fn takes_effort(&self, info: &crate::catalog::ModelInfo) -> bool {
        let endpoint = &self.source.endpoint;
        let wire = match info.responses_only && endpoint.kind == crate::provider::ProviderKind::OpenAi {
            true if endpoint.is_openai_own() => crate::provider::ProviderKind::OpenAiResponses,
            _ => endpoint.kind,
        };
        info.takes_effort(wire, endpoint.is_openai_own())
    }

    /// The reasoning effort of a request to `model`, where the model takes one.
    pub fn reasoning_effort(&self, model: &str) -> Option<String> {
        let info = self.source.model_info(model);
        if !self.takes_effort(&info) {
            return None;
        }
        let level = self.state().thought_level.clone();
        info.effort_for(&level).map(str::to_string)
    }

    /// The thinking budget of a request to `model` (0 when off or not offered).
    pub fn thinking_budget(&self, model: &str) -> u32 {
        if !self.source.model_info(model).takes_thinking_budget(self.source.endpoint.kind) {
            return 0;
        }
        anthropic::thinking_budget(&self.state().thought_level).unwrap_or(0)
    }

    pub fn config_options(&self) -> Vec<ConfigSelect> {
        let (current, mode, thought_level) = {
            let s = self.state();
            (s.model.clone(), s.mode, s.thought_level.clone())
        };
        let choice = |id: &str, name: &str, description: Option<String>| Choice {
            id: id.to_string(),
            name: name.to_string(),
            description,
            takes_images: None,
        };
        let modes = Mode::ALL.into_iter().map(|m| choice(m.id(), m.name(), Some(m.description(&self.sandbox))));
        let models = self
            .source
            .models
            .iter()
            .map(|m| Choice { takes_images: Some(self.source.model_info(m).images), ..choice(m, m, None) });
        let offers_thought_level = self.offers_thought_level(&current);
        let current_model = current.clone();
        let mut all = vec![
            ConfigSelect {
                id: MODE_OPTION,
                name: "Mode",
                description: "When Corvid asks before editing files or running commands",
                category: ConfigCategory::Mode,
                current: mode.id().to_string(),
                choices: modes.collect(),
            },
            ConfigSelect {
                id: MODEL_OPTION,
                name: "Model",
                description: "The model that answers in this session",
                category: ConfigCategory::Model,
                current,
                choices: models.collect(),
            },
        ];
        if offers_thought_level {
            let info = self.source.model_info(&current_model);
            let efforts = self.takes_effort(&info);
            let levels = anthropic::THOUGHT_LEVELS.iter().map(|(id, name, budget)| {
                let description = match (efforts, *budget) {
                    (true, _) => format!("Reasoning effort `{}`", info.effort_for(id).unwrap_or("default")),
                    (false, 0) => "No extended thinking".to_string(),
                    (false, budget) => format!("Up to {budget} tokens of extended thinking per request"),
                };
                choice(id, name, Some(description))
            });
            all.push(ConfigSelect {
                id: THOUGHT_LEVEL_OPTION,
                name: "Thinking",
                description: "How much the model thinks before it answers",
                category: ConfigCategory::ThoughtLevel,
                current: thought_level,
                choices: levels.collect(),
            });
        }
        all
    }
}

/// The config option id of the model picker.
pub const MODEL_OPTION: &str = "model";
/// The config option id of the permission mode.
pub const MODE_OPTION: &str = "mode";
/// The config option id of the extended-thinking level.
pub const THOUGHT_LEVEL_OPTION: &str = "thought_level";
/// Thinking costs tokens and time, so it is opt-in.
pub const DEFAULT_THOUGHT_LEVEL: &str = "off";

impl Session {
    /// The legacy `modes` state, kept in sync with the `mode` config option.
    pub fn mode_state(&self) -> acp::SessionModeState {
        let modes =
            Mode::ALL.iter().map(|m| acp::SessionMode::new(m.id(), m.name()).description(m.description(&self.sandbox)));
        acp::SessionModeState::new(self.state().mode.id(), modes.collect())
    }
}

pub struct TurnClaim {
    pub session: Arc<Session>,
    pub number: u64,
    pub cancel: CancellationToken,
}

impl Drop for TurnClaim {
    fn drop(&mut self) {
        let mut state = self.session.state();
        if state.turn.as_ref().is_some_and(|t| t.number == self.number) {
            state.turn = None;
            // Under the same lock that ends the turn, so no message can be queued for a turn
            // that will not read it: their requests are answered as missed.
            state.steering.clear();
        }
        drop(state);
        self.session.idle.notify_waiters();
    }
}

/// All live sessions of one connection.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    /// Ids with a `session/load` or `session/resume` in flight (a count: loads may overlap).
    loading: Arc<Mutex<HashMap<String, usize>>>,
}

/// Marks a session id as being loaded until dropped.
pub struct LoadingMark {
    id: String,
    loading: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for LoadingMark {
    fn drop(&mut self) {
        let mut loading = self.loading.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(n) = loading.get_mut(&self.id) {
            *n -= 1;
            if *n == 0 {
                loading.remove(&self.id);
            }
        }
    }
}

impl Sessions {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The sessions the client opened (subagents' sessions are their parents').
    pub fn count(&self) -> usize {
        self.map().values().filter(|s| s.parent.is_none()).count()
    }

    pub fn insert(&self, session: Arc<Session>) {
        self.map().insert(session.id.clone(), session);
    }

    pub fn get(&self, id: &str) -> Result<Arc<Session>, AgentError> {
        if let Some(session) = self.map().get(id).cloned() {
            return Ok(session);
        }
        let loading = self.loading.lock().map(|l| l.contains_key(id)).unwrap_or(false);
        Err(if loading {
            AgentError::SessionLoading(id.to_string())
        } else {
            AgentError::SessionNotFound(id.to_string())
        })
    }

    /// Marks the `sessionId` of load/resume params as loading (nothing if there is none: the
    /// request then fails on its params anyway).
    pub fn begin_loading(&self, params: Option<&serde_json::Value>) -> Option<LoadingMark> {
        let id = params?.get("sessionId")?.as_str()?.to_string();
        let mut loading = self.loading.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *loading.entry(id.clone()).or_insert(0) += 1;
        Some(LoadingMark { id, loading: self.loading.clone() })
    }

    /// Takes a session out of the connection; its MCP servers and background commands end
    /// with it. Their terminals are told nothing more: the session is being deleted or made
    /// anew from the store (a reload), and an update stored now would take a sequence number
    /// the new one uses. [`Sessions::close`] tells them.
    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.map().remove(id);
        if let Some(session) = &session {
            if let Some(mcp) = session.mcp.get() {
                mcp.shutdown();
            }
            session.background.end_all(true);
        }
        session
    }

    /// Takes a session out of the connection for good (`session/close`, `session/stop`): its
    /// background commands' terminals still report their exit, so a replay shows them ended.
    pub fn close(&self, id: &str) -> Option<Arc<Session>> {
        if let Some(session) = self.map().get(id) {
            session.background.end_all(false);
        }
        self.remove(id)
    }

    /// Cancels every running turn and ends every MCP server and background command
    /// (connection ending).
    pub fn cancel_all(&self) {
        for session in self.map().values() {
            if let Some(mcp) = session.mcp.get() {
                mcp.shutdown();
            }
            session.background.end_all(false);
            session.cancel_turn();
        }
    }
}
