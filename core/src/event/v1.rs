//! Events as ACP v1 spells them: the `session/update` payloads, and the pieces of v1
//! responses and requests built from the same types (config options, a permission question's
//! tool call). Nothing else in Corvid builds a v1 `SessionUpdate`.

use agent_client_protocol_schema::v1 as acp;

use super::json_text::{Spliced, Texts};
use super::{
    Choice, Command, Compaction, CompactionStatus, ConfigCategory, ConfigSelect, Event, Location, PlanItem,
    PlanPriority, PlanStatus, SessionMessage, StopReason, Subagent, SubagentState, ToolContent, ToolKind, ToolPatch,
    ToolStart, ToolStatus, Usage,
};

/// The `update` of a `session/update`, serialized. Tool calls are spelled out where the
/// crate omits defaults: a new call says `"status":"pending"`, and a diff of a new file says
/// `"oldText":null`, so clients that do not apply the schema's defaults still render them right.
///
/// A diff's texts (a file's whole old and new text, megabytes for a large file) are not
/// copied into the schema's types: they are spliced into the serialized update
/// ([`json_text::Texts`]), which writes what serde_json would, at memory speed.
///
/// An agent-owned terminal's update, which v1 has no word for, is stored in v2's spelling
/// (`event::v2::terminal`) and never sent to v1 clients ([`for_v1`]).
pub fn payload(event: &Event) -> serde_json::Result<Spliced> {
    if let Event::Terminal(t) = event {
        return Ok(Spliced { json: super::v2::terminal_payload(t), texts: Vec::new(), copies: Vec::new() });
    }
    let mut texts = Texts::spliced();
    let Some(update) = session_update(event, &mut texts) else {
        return Err(serde::ser::Error::custom("an update v1 has no word for"));
    };
    if !matches!(update, acp::SessionUpdate::ToolCall(_) | acp::SessionUpdate::ToolCallUpdate(_)) {
        return Ok(texts.splice(serde_json::to_string(&update)?));
    }
    let mut value = serde_json::to_value(&update)?;
    if let Some(obj) = value.as_object_mut() {
        if obj.get("sessionUpdate").and_then(|v| v.as_str()) == Some("tool_call") {
            obj.entry("status").or_insert_with(|| "pending".into());
        }
        if let Some(content) = obj.get_mut("content").and_then(|c| c.as_array_mut()) {
            for item in content.iter_mut().filter_map(|i| i.as_object_mut()) {
                if item.get("type").and_then(|t| t.as_str()) == Some("diff") {
                    item.entry("oldText").or_insert(serde_json::Value::Null);
                }
            }
        }
    }
    Ok(texts.splice(serde_json::to_string(&value)?))
}

/// The v1 `SessionUpdate` of an event (`None`: v1 has no word for it).
fn session_update<'e>(event: &'e Event, texts: &mut Texts<'e>) -> Option<acp::SessionUpdate> {
    Some(match event {
        Event::UserChunk { message_id, content } => {
            acp::SessionUpdate::UserMessageChunk(chunk(content.clone(), message_id))
        }
        Event::MessageChunk { message_id, text } => {
            acp::SessionUpdate::AgentMessageChunk(chunk(acp::ContentBlock::from(text.clone()), message_id))
        }
        Event::ThoughtChunk { message_id, text } => {
            acp::SessionUpdate::AgentThoughtChunk(chunk(acp::ContentBlock::from(text.clone()), message_id))
        }
        Event::ToolStarted(start) => acp::SessionUpdate::ToolCall(tool_call(start)),
        Event::ToolChanged(patch) => acp::SessionUpdate::ToolCallUpdate(tool_call_update_with(patch, texts)),
        Event::Plan(items) => acp::SessionUpdate::Plan(acp::Plan::new(items.iter().map(plan_entry).collect())),
        Event::PlanUpdate { plan_id, items } => acp::SessionUpdate::PlanUpdate(acp::PlanUpdate::new(
            acp::PlanUpdateContent::items(plan_id.clone(), items.iter().map(plan_entry).collect()),
        )),
        Event::PlanRemoved { plan_id } => acp::SessionUpdate::PlanRemoved(acp::PlanRemoved::new(plan_id.clone())),
        Event::Usage(usage) => acp::SessionUpdate::UsageUpdate(usage_update(usage)),
        Event::SessionInfo { title, updated_at } => acp::SessionUpdate::SessionInfoUpdate(
            acp::SessionInfoUpdate::new().title(title.clone()).updated_at(updated_at.clone()),
        ),
        Event::Compaction(compaction) => acp::SessionUpdate::CompactionUpdate(compaction_update(compaction)),
        Event::CompactionChunk { compaction_id, text } => acp::SessionUpdate::CompactionSummaryChunk(
            acp::CompactionSummaryChunk::new(compaction_id.clone(), acp::ContentBlock::from(text.clone())),
        ),
        Event::Notice { title, description } => acp::SessionUpdate::Notice(
            acp::Notice::new(acp::NoticeSeverity::Warning, title.clone()).description(description.clone()),
        ),
        Event::Commands(commands) => acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
            commands.iter().map(command).collect(),
        )),
        Event::ConfigOptions(options) => {
            acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(config_options(options)))
        }
        Event::Mode(mode) => acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(mode.clone())),
        Event::Subagent(subagent) => acp::SessionUpdate::SubagentUpdate(subagent_update(subagent)),
        Event::SessionMessage(m) => acp::SessionUpdate::SessionMessage(session_message(m)),
        Event::SessionMessageChunk { message_id, content } => {
            acp::SessionUpdate::SessionMessageChunk(acp::SessionMessageChunk::new(message_id.clone(), content.clone()))
        }
        Event::Terminal(_) => return None,
    })
}

/// A stored payload as v1 clients are sent it: the payload itself, except for what only v2's
/// agent-owned terminals have (a session run over v2, loaded over v1). Their own updates are
/// not sent, and a card that shows one shows the command's output kept in its
/// `rawOutput.output` instead (a running card's update, which has none yet, changes nothing).
pub fn for_v1(payload: &str) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    if payload.starts_with(super::v2::TERMINAL_PAYLOAD_START) {
        return None;
    }
    if !payload.contains(super::AGENT_TERMINAL_PREFIX) {
        return Some(Cow::Borrowed(payload));
    }
    let Ok(mut update) = serde_json::from_str::<serde_json::Value>(payload) else {
        return Some(Cow::Borrowed(payload));
    };
    let output = update.pointer("/rawOutput/output").and_then(|o| o.as_str()).map(str::to_string);
    let Some(obj) = update.as_object_mut() else { return Some(Cow::Borrowed(payload)) };
    let Some(items) = obj.get_mut("content").and_then(|c| c.as_array_mut()) else {
        return Some(Cow::Borrowed(payload));
    };
    let before = items.len();
    items.retain(|item| {
        let id = item.get("terminalId").and_then(|t| t.as_str());
        !(item.get("type").and_then(|t| t.as_str()) == Some("terminal")
            && id.is_some_and(|id| id.starts_with(super::AGENT_TERMINAL_PREFIX)))
    });
    if items.len() == before {
        return Some(Cow::Borrowed(payload));
    }
    match output {
        Some(text) => items.push(serde_json::json!({ "type": "content", "content": { "type": "text", "text": text } })),
        None if items.is_empty() => {
            obj.remove("content");
        }
        None => {}
    }
    Some(Cow::Owned(update.to_string()))
}

fn subagent_update(s: &Subagent) -> acp::SubagentUpdate {
    let state = match s.state {
        SubagentState::Running => acp::StateUpdate::Running(acp::RunningStateUpdate::new()),
        SubagentState::Done(reason) => {
            let reason = match reason {
                Some(StopReason::EndTurn) => acp::IdleStopReason::EndTurn,
                Some(StopReason::MaxTokens) => acp::IdleStopReason::MaxTokens,
                Some(StopReason::MaxTurnRequests) => acp::IdleStopReason::MaxTurnRequests,
                Some(StopReason::Refusal) => acp::IdleStopReason::Refusal,
                Some(StopReason::Cancelled) => acp::IdleStopReason::Cancelled,
                None => acp::IdleStopReason::Error(acp::ErrorStopReason::new()),
            };
            acp::StateUpdate::Idle(acp::IdleStateUpdate::new().stop_reason(reason))
        }
    };
    let mut update = acp::SubagentUpdate::new(s.session_id.clone()).state(state);
    if let Some(title) = &s.title {
        // The announcement also grants what the client may do to the child: cancel its work.
        let cancel = acp::SubagentSessionCapabilities::new().cancel(acp::SessionCancelCapabilities::new());
        update = update.title(title.clone()).capabilities(cancel);
    }
    if let Some(description) = &s.description {
        update = update.description(description.clone());
    }
    update
}

fn session_message(m: &SessionMessage) -> acp::SessionMessage {
    let message = acp::SessionMessage::new(m.message_id.clone())
        .sender_session_id(acp::SessionId::new(m.sender.clone()))
        .recipient_session_id(acp::SessionId::new(m.recipient.clone()));
    match (&m.other_message_id, m.incoming) {
        (Some(other), true) => message.sender_message_id(acp::MessageId::new(other.clone())),
        (Some(other), false) => message.recipient_message_id(acp::MessageId::new(other.clone())),
        (None, _) => message,
    }
}

/// The `session/prompt` response of a turn that ended so. The turn's token use is the unstable
/// schema's `usage` for a client that asked for that field (`root_usage`), else
/// `_meta.corvid.usage` (same shape): the stable v1 `PromptResponse` has no `usage`, and custom
/// root fields are reserved for the spec.
pub fn prompt_response(end: &crate::event::TurnEnd, root_usage: bool) -> serde_json::Result<serde_json::Value> {
    let usage = end.tokens.map(|t| acp::Usage::new(t.input + t.output, t.input, t.output));
    let response = acp::PromptResponse::new(stop_reason(end.stop));
    match usage {
        Some(usage) if !root_usage => {
            let mut corvid = serde_json::Map::new();
            corvid.insert("usage".into(), serde_json::to_value(&usage)?);
            let mut meta = serde_json::Map::new();
            meta.insert("corvid".into(), serde_json::Value::Object(corvid));
            serde_json::to_value(response.meta(meta))
        }
        usage => serde_json::to_value(response.usage(usage)),
    }
}

pub fn stop_reason(reason: StopReason) -> acp::StopReason {
    match reason {
        StopReason::EndTurn => acp::StopReason::EndTurn,
        StopReason::MaxTokens => acp::StopReason::MaxTokens,
        StopReason::MaxTurnRequests => acp::StopReason::MaxTurnRequests,
        StopReason::Refusal => acp::StopReason::Refusal,
        StopReason::Cancelled => acp::StopReason::Cancelled,
    }
}

fn chunk(content: acp::ContentBlock, message_id: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(content).message_id(acp::MessageId::new(message_id.to_string()))
}

fn tool_call(start: &ToolStart) -> acp::ToolCall {
    acp::ToolCall::new(start.id.clone(), start.title.clone())
        .name(start.name.clone())
        .kind(tool_kind(start.kind))
        .status(acp::ToolCallStatus::Pending)
        .locations(start.locations.iter().map(location).collect())
        .raw_input(start.raw_input.clone())
}

/// A tool call patch as v1's `ToolCallUpdate` (also the tool call of a permission question).
pub fn tool_call_update(patch: &ToolPatch) -> acp::ToolCallUpdate {
    tool_call_update_with(patch, &mut Texts::copied())
}

fn tool_call_update_with<'e>(patch: &'e ToolPatch, texts: &mut Texts<'e>) -> acp::ToolCallUpdate {
    let mut fields = acp::ToolCallUpdateFields::new();
    if let Some(title) = &patch.title {
        fields = fields.title(title.clone());
    }
    if let Some(kind) = patch.kind {
        fields = fields.kind(tool_kind(kind));
    }
    if let Some(status) = patch.status {
        fields = fields.status(tool_status(status));
    }
    if let Some(locations) = &patch.locations {
        fields = fields.locations(locations.iter().map(location).collect::<Vec<_>>());
    }
    if let Some(raw_input) = &patch.raw_input {
        fields = fields.raw_input(raw_input.clone());
    }
    if let Some(content) = &patch.content {
        fields = fields.content(content.iter().map(|c| tool_content(c, texts)).collect::<Vec<_>>());
    }
    if let Some(raw_output) = &patch.raw_output {
        fields = fields.raw_output(raw_output.clone());
    }
    acp::ToolCallUpdate::new(patch.id.clone(), fields)
}

fn tool_kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Think => acp::ToolKind::Think,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

fn tool_status(status: ToolStatus) -> acp::ToolCallStatus {
    match status {
        ToolStatus::Pending => acp::ToolCallStatus::Pending,
        ToolStatus::Running => acp::ToolCallStatus::InProgress,
        ToolStatus::Completed => acp::ToolCallStatus::Completed,
        ToolStatus::Failed => acp::ToolCallStatus::Failed,
    }
}

fn location(l: &Location) -> acp::ToolCallLocation {
    acp::ToolCallLocation::new(l.path.clone()).line(l.line)
}

fn tool_content<'e>(content: &'e ToolContent, texts: &mut Texts<'e>) -> acp::ToolCallContent {
    match content {
        ToolContent::Text(text) => acp::ToolCallContent::from(acp::ContentBlock::from(text.clone())),
        ToolContent::Block(block) => acp::ToolCallContent::from(block.as_ref().clone()),
        ToolContent::Diff { path, old, new } => {
            let new = texts.place(new);
            acp::ToolCallContent::from(
                acp::Diff::new(path.clone(), new).old_text(old.as_deref().map(|o| texts.place(o))),
            )
        }
        ToolContent::Terminal(id) => acp::ToolCallContent::Terminal(acp::Terminal::new(id.clone())),
        ToolContent::Session(id) => acp::ToolCallContent::Session(acp::SessionReference::new(id.clone())),
    }
}

fn plan_entry(item: &PlanItem) -> acp::PlanEntry {
    let priority = match item.priority {
        PlanPriority::High => acp::PlanEntryPriority::High,
        PlanPriority::Medium => acp::PlanEntryPriority::Medium,
        PlanPriority::Low => acp::PlanEntryPriority::Low,
    };
    let status = match item.status {
        PlanStatus::Pending => acp::PlanEntryStatus::Pending,
        PlanStatus::InProgress => acp::PlanEntryStatus::InProgress,
        PlanStatus::Completed => acp::PlanEntryStatus::Completed,
    };
    acp::PlanEntry::new(item.content.clone(), priority, status)
}

/// The session's running total travels in the update itself (`cost`, and the token total
/// under `_meta.corvid.sessionTokens`), so the stored updates alone restore it on load
/// (`agent::accounting::spent_from`).
fn usage_update(usage: &Usage) -> acp::UsageUpdate {
    let mut update = acp::UsageUpdate::new(usage.used, usage.size);
    if let Some(cost) = &usage.cost {
        update = update.cost(acp::Cost::new(cost.amount, cost.currency.clone()));
    }
    let mut meta = serde_json::Map::new();
    let mut corvid = serde_json::json!({ "sessionTokens": usage.session_tokens });
    if usage.cache_read_tokens + usage.cache_write_tokens > 0 {
        corvid["cacheReadTokens"] = usage.cache_read_tokens.into();
        corvid["cacheWriteTokens"] = usage.cache_write_tokens.into();
    }
    meta.insert("corvid".into(), corvid);
    update.meta(meta)
}

fn compaction_update(c: &Compaction) -> acp::CompactionUpdate {
    let status = match c.status {
        CompactionStatus::Running => acp::CompactionStatus::InProgress,
        CompactionStatus::Completed => acp::CompactionStatus::Completed,
        CompactionStatus::Failed => acp::CompactionStatus::Failed,
        CompactionStatus::Cancelled => acp::CompactionStatus::Cancelled,
    };
    let mut update = acp::CompactionUpdate::new(c.id.clone(), status);
    if let Some(error) = &c.error {
        update = update.error(error.clone());
    }
    if let Some(summary) = &c.summary {
        update = update.summary(vec![acp::ContentBlock::from(summary.clone())]);
    }
    update
}

fn command(c: &Command) -> acp::AvailableCommand {
    let command = acp::AvailableCommand::new(c.name, c.description);
    match c.hint {
        Some(hint) => command.input(acp::AvailableCommandInput::Unstructured(acp::UnstructuredCommandInput::new(hint))),
        None => command,
    }
}

/// The session's settings as v1 config options (in `session/new`, `session/load` and
/// `session/set_config_option` answers, and in `config_option_update`).
pub fn config_options(options: &[ConfigSelect]) -> Vec<acp::SessionConfigOption> {
    options.iter().map(config_option).collect()
}

fn config_option(o: &ConfigSelect) -> acp::SessionConfigOption {
    let choices: Vec<_> = o.choices.iter().map(choice).collect();
    let category = match o.category {
        ConfigCategory::Mode => acp::SessionConfigOptionCategory::Mode,
        ConfigCategory::Model => acp::SessionConfigOptionCategory::Model,
        ConfigCategory::ThoughtLevel => acp::SessionConfigOptionCategory::ThoughtLevel,
    };
    acp::SessionConfigOption::select(o.id, o.name, o.current.clone(), choices)
        .category(category)
        .description(o.description.to_string())
}

fn choice(c: &Choice) -> acp::SessionConfigSelectOption {
    let mut option = acp::SessionConfigSelectOption::new(c.id.clone(), c.name.clone());
    if let Some(d) = &c.description {
        option = option.description(d.clone());
    }
    match c.takes_images {
        Some(images) => {
            let mut meta = serde_json::Map::new();
            meta.insert("corvid".into(), serde_json::json!({ "images": images }));
            option.meta(meta)
        }
        None => option,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::event::Cost;

    fn rendered(event: &Event) -> Value {
        serde_json::from_str(&payload(event).expect("payload").json).expect("json")
    }

    #[test]
    fn a_new_call_says_pending_and_a_new_file_says_old_text_null() {
        let start = ToolStart {
            id: "t1-1".into(),
            name: "write_file".into(),
            title: "Write a.txt".into(),
            kind: ToolKind::Edit,
            locations: vec![Location { path: "/w/a.txt".into(), line: None }],
            raw_input: json!({ "path": "a.txt" }),
        };
        let v = rendered(&Event::ToolStarted(start));
        assert_eq!(v["sessionUpdate"], "tool_call");
        assert_eq!(v["status"], "pending");
        assert_eq!(v["kind"], "edit");
        assert_eq!(v["locations"][0]["path"], "/w/a.txt");

        let diff = ToolContent::Diff { path: "/w/a.txt".into(), old: None, new: "hi".into() };
        let patch = ToolPatch::new("t1-1").status(ToolStatus::Completed).content(vec![diff]);
        let v = rendered(&Event::ToolChanged(patch));
        assert_eq!(v["sessionUpdate"], "tool_call_update");
        assert_eq!(v["status"], "completed");
        let content = &v["content"][0];
        assert_eq!(content["type"], "diff");
        assert!(content.get("oldText").is_some_and(Value::is_null), "{content}");
        assert_eq!(content["newText"], "hi");
        assert!(v.get("title").is_none(), "a patch leaves unset fields out: {v}");
    }

    #[test]
    fn a_large_diff_is_spliced_in_and_reads_as_the_crate_spells_it() {
        let old = "line\n\"quoted\"\ttab\n".repeat(1000);
        let new = old.replacen("quoted", "edited", 1);
        let diff = ToolContent::Diff { path: "/w/a.txt".into(), old: Some(old.clone()), new: new.clone() };
        let event = Event::ToolChanged(ToolPatch::new("t1-1").status(ToolStatus::Completed).content(vec![diff]));
        let text = payload(&event).expect("serializes").json;
        let expected = serde_json::to_string(&session_update(&event, &mut Texts::copied()).expect("a v1 update"))
            .expect("serializes");
        assert_eq!(text, expected, "splicing writes what serde_json writes");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            (v["content"][0]["oldText"].as_str(), v["content"][0]["newText"].as_str()),
            (Some(&*old), Some(&*new))
        );

        let created = ToolContent::Diff { path: "/w/b.txt".into(), old: None, new: new.clone() };
        let v = rendered(&Event::ToolChanged(ToolPatch::new("t1-2").content(vec![created])));
        assert!(v["content"][0].get("oldText").is_some_and(Value::is_null), "a new file's diff says so");
        assert_eq!(v["content"][0]["newText"].as_str(), Some(&*new));
    }

    #[test]
    fn running_is_in_progress_and_usage_carries_the_session_total() {
        let v = rendered(&Event::ToolChanged(ToolPatch::new("t1-2").status(ToolStatus::Running)));
        assert_eq!(v["status"], "in_progress");
        let usage = Usage {
            used: 120,
            size: 1000,
            cost: Some(Cost { amount: 0.5, currency: "EUR".into() }),
            session_tokens: 900,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        };
        let v = rendered(&Event::Usage(usage.clone()));
        assert_eq!((v["used"].as_u64(), v["size"].as_u64()), (Some(120), Some(1000)));
        assert_eq!(v["cost"]["currency"], "EUR");
        assert_eq!(v["_meta"]["corvid"]["sessionTokens"], 900);
        assert!(v["_meta"]["corvid"].get("cacheReadTokens").is_none(), "no cache, no cache counts");
        let v = rendered(&Event::Usage(Usage { cache_read_tokens: 80, cache_write_tokens: 20, ..usage }));
        assert_eq!(
            (v["_meta"]["corvid"]["cacheReadTokens"].as_u64(), v["_meta"]["corvid"]["cacheWriteTokens"].as_u64()),
            (Some(80), Some(20))
        );
    }

    #[test]
    fn a_model_choice_says_whether_it_takes_images_and_other_choices_say_nothing() {
        let choice =
            |id: &str, takes_images| Choice { id: id.into(), name: id.into(), description: None, takes_images };
        let options = config_options(&[ConfigSelect {
            id: "model",
            name: "Model",
            description: "The model",
            category: ConfigCategory::Model,
            current: "a".into(),
            choices: vec![choice("a", Some(true)), choice("b", Some(false)), choice("c", None)],
        }]);
        let v = serde_json::to_value(&options).expect("json");
        let meta: Vec<Value> = (0..3).map(|i| v[0]["options"][i]["_meta"].clone()).collect();
        assert_eq!(
            meta,
            vec![json!({ "corvid": { "images": true } }), json!({ "corvid": { "images": false } }), Value::Null]
        );
    }
}
