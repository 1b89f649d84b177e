//! The tool trait, what a running tool gets, and the set of tools a turn offers.

use std::path::Path;
use std::sync::{Arc, LazyLock};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::files::Files;
use super::review::Part;
use super::{Announce, BackgroundCommands, Jail, Needs, Output, TerminalFeed, ToolError};
use crate::editor::EditorClient;
use crate::event::{PlanItem, Terminal, ToolContent};
use crate::provider::ToolSpec;

/// One tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// Its description and JSON schema, as offered to the model.
    fn spec(&self) -> ToolSpec;

    /// How a call is shown before it runs, and what permission it needs. Fails on bad arguments
    /// (or a path outside the jail) before anything is shown as running.
    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError>;

    /// Settles what the arguments alone cannot, before the permission is decided (`web_fetch`
    /// resolves its host: a name that leads to a local address asks like one). Most tools
    /// know all they need from their arguments.
    fn assess<'a>(&'a self, announce: Announce, _cancel: &'a CancellationToken) -> BoxFuture<'a, Announce> {
        Box::pin(async move { announce })
    }

    /// Whether the card stays `pending` while the tool runs: a tool whose running is waiting for
    /// the user (a question) is not yet at work, and its end is what marks the card.
    fn waits_for_user(&self) -> bool {
        false
    }

    /// Whether a call only reads (the workspace, or the web): it changes nothing, so such
    /// calls in one answer run at once (any permission questions still one at a time), and
    /// one succeeding does not mean something changed.
    fn reads_only(&self) -> bool {
        false
    }

    /// Whether the tool bounds its own result and says how to read on (`read_file`): such a
    /// result is not cut again for the model (`tools::cap`).
    fn pages_itself(&self) -> bool {
        false
    }

    /// Whether the tool can write part of the change its preview shows (some hunks of a
    /// one-file edit, `tools::review`): the question then offers its hunks, and an answer that
    /// rejects some runs it with `ToolContext::part`.
    fn writes_in_part(&self) -> bool {
        false
    }

    /// What would change, worked out before the user is asked (an edit's diff, shown in the
    /// question). An error fails the call without asking. Most tools change nothing to preview.
    fn preview<'a>(
        &'a self,
        _args: &'a Value,
        _cx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Vec<ToolContent>, ToolError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Runs the call. Long waits race `cx.cancel` and return [`ToolError::Cancelled`].
    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>>;
}

/// What a running tool may tell the client, besides its result.
pub trait Updates: Send + Sync {
    /// Replaces the content of the call's card while it runs (output so far, an embedded
    /// terminal). With `on_screen`, returns only once the client has it.
    fn show(&self, content: Vec<ToolContent>, on_screen: bool) -> BoxFuture<'_, ()>;
    /// The model's plan, as the session's `plan` update.
    fn plan(&self, plan: Vec<PlanItem>) -> BoxFuture<'_, ()>;
    /// Reports on the call's agent-owned terminal (v2 clients).
    fn terminal(&self, update: Terminal) -> BoxFuture<'_, ()>;
    /// A token that `terminal/cancel` of `terminal_id` fires, until [`Updates::terminal_ended`].
    fn cancellable_terminal(&self, terminal_id: &str) -> CancellationToken;
    fn terminal_ended(&self, terminal_id: &str);
    /// The agent-owned terminal of a background command, which outlives the call: its updates
    /// go out as the session's, and `terminal/cancel` of it fires `stop` while it runs.
    fn background_terminal(&self, terminal_id: &str, stop: &CancellationToken) -> Arc<dyn TerminalFeed>;
}

/// Everything a tool call runs with.
pub struct ToolContext<'a> {
    /// The id of the call's card (as the client knows it).
    pub call_id: &'a str,
    pub jail: &'a Jail,
    /// The session's editor, its requests racing the turn's token.
    pub editor: &'a EditorClient,
    pub updates: &'a dyn Updates,
    /// The turn's cancellation.
    pub cancel: &'a CancellationToken,
    /// Where binary results (MCP images, blobs) are stored.
    pub uploads: &'a Path,
    /// Where this session's long tool outputs are saved whole (`cap`); `read_file` reads them.
    pub outputs: &'a Path,
    /// How the session's commands are confined (before any escalation of this call).
    pub sandbox: &'a crate::sandbox::Confinement,
    /// What the call was allowed as (`web_fetch` reaches a local host only if that was asked).
    pub needs: &'a Needs,
    /// The session's background commands (`run_command` with `background`, `command_output`,
    /// `kill_command`).
    pub background: &'a BackgroundCommands,
    /// The user approved only part of the change (`writes_in_part` tools): write only that.
    pub part: Option<&'a Part>,
}

impl ToolContext<'_> {
    /// Where file tools read and write: the editor when it offers, else the disk.
    pub fn files(&self) -> Files<'_> {
        Files::new(self.editor, self.cancel)
    }
}

/// The built-in tools, in the order they are offered.
static BUILTIN: LazyLock<Vec<Arc<dyn Tool>>> = LazyLock::new(|| {
    vec![
        Arc::new(super::read_file::ReadFile),
        Arc::new(super::list_directory::ListDirectory),
        Arc::new(super::glob::Glob),
        Arc::new(super::search::Search),
        Arc::new(super::write_file::WriteFile),
        Arc::new(super::edit_file::EditFile),
        Arc::new(super::apply_patch::ApplyPatch),
        Arc::new(super::run_command::RunCommand),
        Arc::new(super::command_output::CommandOutput),
        Arc::new(super::kill_command::KillCommand),
        Arc::new(super::deliver_file::DeliverFile),
        Arc::new(super::ask_user::AskUser),
        Arc::new(super::update_plan::UpdatePlan),
        Arc::new(super::web_fetch::WebFetch),
    ]
});

/// The tools one turn offers, looked up by name.
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    /// The built-ins `enabled` accepts (an agent alias's `tools` list), then `extra` (the
    /// session's MCP tools).
    pub fn new(enabled: impl Fn(&str) -> bool, extra: Vec<Arc<dyn Tool>>) -> Self {
        let mut tools: Vec<Arc<dyn Tool>> = BUILTIN.iter().filter(|t| enabled(t.name())).cloned().collect();
        tools.extend(extra);
        Self { tools }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }
}
