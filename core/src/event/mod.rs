//! What the engine reports about a session, in no protocol version's words: the turn, the
//! tools and the session handlers say *what happened* (a chunk of the answer, a tool call
//! started, a plan, a mode change); [`v1`] alone says how ACP v1 spells it as a
//! `session/update`. A v2 rendering goes beside it, and nothing that emits events changes.
//!
//! Rich content blocks (a prompt's image, an MCP resource) are carried as the schema's
//! `ContentBlock`: v1 and v2 give them the same shape. Everything whose shape differs between
//! the versions (diffs, tool calls, plans, config options) is Corvid's own type here.
//!
//! Stored sessions keep what was sent to v1 clients: the v1 payload
//! (`store::batch::Record::Update`); [`v2`] converts those for v2 connections.

pub(crate) mod json_text;
pub(crate) mod repeats;
pub mod v1;
pub mod v2;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

/// The protocol version a connection speaks (0 until its `initialize`): how its frames are
/// spelled. Shared by the connection's agent, which sets it, and its outbox, which reads it.
#[derive(Debug, Clone, Default)]
pub struct Wire(Arc<AtomicU16>);

impl Wire {
    pub fn version(&self) -> u16 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self, version: u16) {
        self.0.store(version, Ordering::Relaxed);
    }

    pub fn is_v2(&self) -> bool {
        self.version() >= 2
    }
}

/// One thing a client is told about a session.
#[derive(Debug, Clone)]
pub enum Event {
    /// A block of the user's prompt (stored only: the client has it already).
    UserChunk { message_id: String, content: acp::ContentBlock },
    /// Text of the agent's answer.
    MessageChunk { message_id: String, text: String },
    /// Text of the model's reasoning.
    ThoughtChunk { message_id: String, text: String },
    /// A new tool call, pending.
    ToolStarted(ToolStart),
    /// A change to a tool call: only the fields that are set change.
    ToolChanged(ToolPatch),
    /// The model's whole plan, replacing the last one.
    Plan(Vec<PlanItem>),
    /// The plan `plan_id` created or replaced (plan operations, for clients that advertise `plan`).
    PlanUpdate { plan_id: String, items: Vec<PlanItem> },
    /// The plan `plan_id` is gone (the model cleared its checklist).
    PlanRemoved { plan_id: String },
    /// What a model request used, and the session's total.
    Usage(Usage),
    /// The session's title and when it was last active.
    SessionInfo { title: String, updated_at: String },
    /// The state of a `/compact`.
    Compaction(Compaction),
    /// Text of a compaction's summary as it streams.
    CompactionChunk { compaction_id: String, text: String },
    /// A warning for the user, apart from the conversation (an MCP server that failed).
    Notice { title: String, description: String },
    /// The slash commands the session offers.
    Commands(Vec<Command>),
    /// The session's settings and their current values.
    ConfigOptions(Vec<ConfigSelect>),
    /// The session's mode changed.
    Mode(String),
    /// A child session of this one (a subagent) was started or changed state. Sent only to
    /// clients that advertise `subagents`, on the parent's stream, before any of the child's own.
    Subagent(Subagent),
    /// A message between this session and another one (a task handed to a subagent, or its
    /// answer): who sends it to whom. Its content follows as [`Event::SessionMessageChunk`]s.
    SessionMessage(SessionMessage),
    /// A block of a [`Event::SessionMessage`]'s content.
    SessionMessageChunk { message_id: String, content: acp::ContentBlock },
    /// A command Corvid runs itself, streamed as an agent-owned terminal (v2 clients only:
    /// v1 has no word for it, see [`v1::for_v1`]).
    Terminal(Terminal),
}

/// The ids of agent-owned terminals start so (then the id of the call that runs the command).
/// A v1 rendering finds them by it: only a v2 connection has them, and a v1 client's own
/// terminals never appear in a session's card on a v2 connection.
pub const AGENT_TERMINAL_PREFIX: &str = "corvid-terminal-";

/// What happens to an agent-owned terminal.
#[derive(Debug, Clone)]
pub enum Terminal {
    /// The command started: what it runs and where. It can be cancelled (`terminal/cancel`).
    Started { id: String, command: String, cwd: PathBuf },
    /// Bytes the command wrote (stdout and stderr, as they came).
    Output { id: String, data: Vec<u8> },
    /// The output as it stands, replacing what was sent: once a long output's stream was cut,
    /// its end.
    Replaced { id: String, data: Vec<u8> },
    /// The command ended: its exit code, or the signal that ended it.
    Exited { id: String, exit_code: Option<i32>, signal: Option<String> },
}

/// A subagent as its parent announces it.
#[derive(Debug, Clone)]
pub struct Subagent {
    pub session_id: String,
    /// Set when announcing (which also tells the client it may `session/cancel` the child);
    /// `None` leaves what was said unchanged.
    pub title: Option<String>,
    pub description: Option<String>,
    pub state: SubagentState,
}

/// What a subagent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubagentState {
    Running,
    /// Its work ended, for this reason (`None`: it failed).
    Done(Option<StopReason>),
}

/// The participants of a message between sessions, as seen in one session's transcript.
#[derive(Debug, Clone)]
pub struct SessionMessage {
    pub message_id: String,
    pub sender: String,
    pub recipient: String,
    /// The same message's id in the other session's transcript, when it has one there.
    pub other_message_id: Option<String>,
    /// Whether `other_message_id` is the sender's (an incoming view) or the recipient's.
    pub incoming: bool,
}

/// How a tool call is shown when it starts.
#[derive(Debug, Clone)]
pub struct ToolStart {
    pub id: String,
    /// The tool's name, as the model called it.
    pub name: String,
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<Location>,
    pub raw_input: Value,
}

/// A change to a tool call (or, in a permission question, the call as it would run).
#[derive(Debug, Clone, Default)]
pub struct ToolPatch {
    pub id: String,
    pub title: Option<String>,
    pub kind: Option<ToolKind>,
    pub status: Option<ToolStatus>,
    pub locations: Option<Vec<Location>>,
    pub content: Option<Vec<ToolContent>>,
    pub raw_input: Option<Value>,
    pub raw_output: Option<Value>,
}

impl ToolPatch {
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), ..Self::default() }
    }

    pub fn status(mut self, status: ToolStatus) -> Self {
        self.status = Some(status);
        self
    }

    pub fn content(mut self, content: Vec<ToolContent>) -> Self {
        self.content = Some(content);
        self
    }

    pub fn raw_output(mut self, raw: Value) -> Self {
        self.raw_output = Some(raw);
        self
    }
}

/// What sort of work a tool call does (clients pick icons by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Search,
    Execute,
    Think,
    /// Reading from the network (`web_fetch`).
    Fetch,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Failed,
}

/// A file a tool call is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub path: PathBuf,
    pub line: Option<u32>,
}

/// What a tool call's card shows.
#[derive(Debug, Clone)]
pub enum ToolContent {
    Text(String),
    /// A rich block (an image, an embedded file).
    Block(Box<acp::ContentBlock>),
    /// Another session this call works through (a subagent): a reference, display only.
    Session(String),
    /// A whole-file change; `old` is `None` for a new file.
    Diff {
        path: PathBuf,
        old: Option<String>,
        new: String,
    },
    /// A terminal the client runs, by its id.
    Terminal(String),
}

#[derive(Debug, Clone)]
pub struct PlanItem {
    pub content: String,
    pub priority: PlanPriority,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanPriority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

/// Token use after a model request.
#[derive(Debug, Clone)]
pub struct Usage {
    /// Tokens in the context after the request (what was sent plus the answer).
    pub used: u64,
    /// The context window.
    pub size: u64,
    /// The session's running cost, when prices are configured.
    pub cost: Option<Cost>,
    /// Every token the session has sent and received (what its budget counts).
    pub session_tokens: u64,
    /// Of this request's input, the tokens read from and written to the provider's prompt
    /// cache (under `_meta.corvid`; priced at their own rates in `cost`).
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

#[derive(Debug, Clone)]
pub struct Compaction {
    pub id: String,
    pub status: CompactionStatus,
    pub error: Option<String>,
    pub summary: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionStatus {
    Running,
    Completed,
    Failed,
    Cancelled,
}

/// A slash command.
#[derive(Debug, Clone)]
pub struct Command {
    pub name: &'static str,
    pub description: &'static str,
    /// What to type after it, when it takes input.
    pub hint: Option<&'static str>,
}

/// A session setting offered as a choice among values.
#[derive(Debug, Clone)]
pub struct ConfigSelect {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub category: ConfigCategory,
    pub current: String,
    pub choices: Vec<Choice>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigCategory {
    Mode,
    Model,
    ThoughtLevel,
}

/// One value of a [`ConfigSelect`].
#[derive(Debug, Clone)]
pub struct Choice {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// A model's: whether it takes images (the model catalog's word). A client can warn before
    /// an image goes to a model that gets only the saved file's path (`_meta.corvid.images`).
    pub takes_images: Option<bool>,
}

/// How a prompt turn ended: why, and the tokens its model requests used (`None` when no
/// request reported any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnEnd {
    pub stop: StopReason,
    pub tokens: Option<TurnTokens>,
}

/// Tokens summed over one turn's model requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnTokens {
    pub input: u64,
    pub output: u64,
}

/// Why a prompt turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

impl StopReason {
    /// The name stored with the turn (the same words as ACP v1's).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurnRequests => "max_turn_requests",
            StopReason::Refusal => "refusal",
            StopReason::Cancelled => "cancelled",
        }
    }

    /// The stop reason of a stored name ([`StopReason::as_str`]).
    pub fn from_stored(name: &str) -> Option<StopReason> {
        [
            StopReason::EndTurn,
            StopReason::MaxTokens,
            StopReason::MaxTurnRequests,
            StopReason::Refusal,
            StopReason::Cancelled,
        ]
        .into_iter()
        .find(|r| r.as_str() == name)
    }
}
