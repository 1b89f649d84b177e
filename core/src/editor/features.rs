//! What the client said it can do at `initialize`, reduced to the switches Corvid acts on.
//! Everything defaults to off: a feature is used only when advertised.

use agent_client_protocol_schema::v1 as acp;

#[derive(Debug, Clone, Copy, Default)]
pub struct ClientFeatures {
    /// `fs.readTextFile`: reads go through the editor (unsaved buffers included).
    pub read_text_file: bool,
    /// `fs.writeTextFile`: writes land in the editor.
    pub write_text_file: bool,
    /// `terminal`: commands run in the client's terminals.
    pub terminal: bool,
    /// `elicitation.form`: `ask_user` shows a form.
    pub elicitation_form: bool,
    /// `session.compaction`: `/compact` reports through `compaction_update`.
    pub compaction: bool,
    /// `auth.terminal`: a terminal auth method (`corvid login`) may be listed.
    pub auth_terminal: bool,
    /// `session.notices`: problems (an MCP server that failed) go out as `notice` updates.
    pub notices: bool,
    /// `plan`: the checklist goes out as plan operations (`plan_update`, `plan_removed`).
    pub plan: bool,
    /// `subagents`: a subagent is a session of its own on the wire (announced with
    /// `subagent_update`, its updates under its id); otherwise its progress shows in the
    /// parent's tool card.
    pub subagents: bool,
    /// `_meta.corvid.promptUsage: true`: the client reads the unstable schema's `usage` at the
    /// root of the `session/prompt` response; others get it under `_meta.corvid.usage` (the
    /// stable v1 `PromptResponse` has no `usage`, and its root fields are the spec's).
    pub prompt_usage: bool,
    /// The connection speaks ACP v2: no client `fs/*` or `terminal/*` (commands run in
    /// agent-owned terminals), and the client's requests (permission questions) take v2's shapes.
    pub v2: bool,
}

impl From<&acp::ClientCapabilities> for ClientFeatures {
    fn from(caps: &acp::ClientCapabilities) -> Self {
        Self {
            read_text_file: caps.fs.read_text_file,
            write_text_file: caps.fs.write_text_file,
            terminal: caps.terminal,
            elicitation_form: caps.elicitation.as_ref().is_some_and(|e| e.form.is_some()),
            compaction: caps.session.as_ref().is_some_and(|s| s.compaction.is_some()),
            // Zed builds before `auth.terminal`, and the ACP Registry's check, say it under
            // `_meta["terminal-auth"]`.
            auth_terminal: caps.auth.terminal
                || caps.meta.as_ref().is_some_and(|m| m.get("terminal-auth").is_some_and(|v| v == true)),
            notices: caps.session.as_ref().is_some_and(|s| s.notices.is_some()),
            plan: caps.plan.is_some(),
            subagents: caps.subagents.is_some(),
            prompt_usage: caps
                .meta
                .as_ref()
                .and_then(|m| m.get("corvid"))
                .and_then(|c| c.get("promptUsage"))
                .is_some_and(|v| v == true),
            v2: false,
        }
    }
}

impl ClientFeatures {
    /// A v2 client's capabilities (`initialize`'s `capabilities`). v2 has no client files or
    /// terminals (commands run in agent-owned terminals); notices and compaction updates are
    /// part of its stable schema. `elicitation.form` lets `ask_user` show a form, as in v1.
    pub fn of_v2(caps: &serde_json::Value) -> Self {
        let on = |pointer: &str| caps.pointer(pointer).is_some_and(|t| !t.is_null() && t != false);
        Self {
            compaction: true,
            notices: true,
            auth_terminal: on("/auth/terminal"),
            elicitation_form: on("/elicitation/form"),
            v2: true,
            ..Self::default()
        }
    }
}
