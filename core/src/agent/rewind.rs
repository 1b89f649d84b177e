//! Rewinding a session to before one of the user's prompts: `session/fork` with
//! `_meta.corvid.beforeMessage` (a user message's `messageId`). The fork holds what came before
//! that prompt (its ledger, model context and turns), so the original session stays as it was;
//! the answer names each file the agent's edits (its subagents' included) changed since, as it
//! was then and as the agent left it, so a client can set it back with a three-way check (a
//! file the user changed since is a conflict, never overwritten). With
//! `_meta.corvid.restoreFiles` the core does that itself, for clients that do not draw files.
//! The fork's model is told what was rewound.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::AgentError;
use crate::store::Store;
use crate::store::batch::ForkEnd;
use crate::tools::Jail;

const M: &str = "session/fork";

/// Where a rewind cuts the history and which files it sets back.
#[derive(Debug)]
pub struct Rewind {
    pub end: ForkEnd,
    pub files: Vec<RewoundFile>,
}

/// A file the agent changed after the rewind's message: as it was then (`None`: it did not
/// exist) and as the agent's last edit left it.
#[derive(Debug, Clone, PartialEq)]
pub struct RewoundFile {
    pub path: String,
    pub before: Option<String>,
    pub after: String,
}

/// What a restore in the core did with each file.
#[derive(Debug, Default)]
pub struct Restored {
    pub restored: Vec<String>,
    /// Changed since the agent's edit (by the user or a command): left as they are.
    pub conflicts: Vec<String>,
}

/// The message a rewind goes back to before, from a fork request's `_meta.corvid`, and whether
/// the core should restore the files itself.
pub fn requested(meta: Option<&serde_json::Map<String, Value>>) -> Result<Option<(String, bool)>, AgentError> {
    let Some(corvid) = meta.and_then(|m| m.get("corvid")) else { return Ok(None) };
    let Some(given) = corvid.get("beforeMessage") else { return Ok(None) };
    let id = given.as_str().filter(|id| !id.is_empty()).ok_or_else(|| {
        AgentError::invalid_params(M, "_meta.corvid.beforeMessage: must be a user message's messageId (a string)")
    })?;
    let restore = corvid.get("restoreFiles").and_then(Value::as_bool).unwrap_or(false);
    Ok(Some((id.to_string(), restore)))
}

/// Where session `session_id`'s history is cut to go back to before user message `message_id`,
/// and the files changed since. Only a message that began a turn can be rewound to, and only
/// while the model context still holds it (a compaction replaces what it summarized).
pub async fn before_message(store: &Store, session_id: &str, message_id: &str) -> Result<Rewind, AgentError> {
    let chunk = store
        .user_chunks(session_id)
        .await?
        .into_iter()
        .find(|(_, _, payload)| message_id_of(payload).as_deref() == Some(message_id));
    let Some((seq, Some(turn), _)) = chunk else {
        let why = format!("_meta.corvid.beforeMessage: session {session_id} has no user prompt {message_id}");
        return Err(AgentError::invalid_params(M, why));
    };
    if store.first_seq_of_turn(session_id, turn).await? != Some(seq) {
        let why = format!(
            "_meta.corvid.beforeMessage: {message_id} was sent while a turn ran; rewind to the prompt that began it"
        );
        return Err(AgentError::invalid_params(M, why));
    }
    let message = store.prompt_messages(session_id).await?.into_iter().find(|(_, content)| {
        serde_json::from_str::<Value>(content).ok().and_then(|m| m.get("prompt_id").cloned())
            == Some(Value::from(message_id))
    });
    let Some((message_seq, _)) = message else {
        let why = format!(
            "_meta.corvid.beforeMessage: the conversation was compacted since {message_id}; rewind to a later prompt"
        );
        return Err(AgentError::invalid_params(M, why));
    };
    let files = rewound_files(&edits_since(store, session_id, seq).await?);
    Ok(Rewind { end: ForkEnd { events: seq, messages: message_seq, turns: turn }, files })
}

/// A tool update and the session it belongs to.
pub type ScopedUpdate = (String, String);

/// The tool updates from seq `from` on: the session's own and, right after a delegate call's
/// update that names its subagent (`rawOutput.sessionId`), all of that subagent's (it ran
/// inside that call, so its edits fall between the parent's before and after it).
async fn edits_since(store: &Store, session_id: &str, from: i64) -> Result<Vec<ScopedUpdate>, AgentError> {
    let mut updates = Vec::new();
    let mut children = std::collections::HashSet::new();
    for (_, _, payload) in store.tool_events_from(session_id, from).await? {
        let child = subagent_of(&payload).filter(|child| child != session_id && children.insert(child.clone()));
        updates.push((session_id.to_string(), payload));
        if let Some(child) = child {
            for (_, _, payload) in store.tool_events_from(&child, i64::MIN).await? {
                updates.push((child.clone(), payload));
            }
        }
    }
    Ok(updates)
}

/// The subagent a delegate call's update names, if it does.
fn subagent_of(payload: &str) -> Option<String> {
    let update: Value = serde_json::from_str(payload).ok()?;
    Some(update.get("rawOutput")?.get("sessionId")?.as_str()?.to_string())
}

fn message_id_of(payload: &str) -> Option<String> {
    let update: Value = serde_json::from_str(payload).ok()?;
    Some(update.get("messageId")?.as_str()?.to_string())
}

/// The files the completed tool calls among `updates` changed (their final diffs), each as the
/// first such call found it and as the last left it; one that ended as it began is left out.
pub fn rewound_files(updates: &[ScopedUpdate]) -> Vec<RewoundFile> {
    // Per tool call (of its session), in the order calls began: its latest diffs and status.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut calls: HashMap<(String, String), (Vec<DiffText>, String)> = HashMap::new();
    for (scope, payload) in updates {
        let Ok(update) = serde_json::from_str::<Value>(payload) else { continue };
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { continue };
        let key = (scope.clone(), id.to_string());
        let call = calls.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (Vec::new(), String::new())
        });
        if let Some(content) = update.get("content").and_then(Value::as_array) {
            let diffs: Vec<_> = content.iter().filter_map(diff_of).collect();
            if !diffs.is_empty() {
                call.0 = diffs;
            }
        }
        if let Some(status) = update.get("status").and_then(Value::as_str) {
            call.1 = status.to_string();
        }
    }
    let mut files: Vec<RewoundFile> = Vec::new();
    for key in &order {
        let Some((diffs, status)) = calls.get(key) else { continue };
        if status != "completed" {
            continue;
        }
        for (path, old, new) in diffs {
            match files.iter_mut().find(|f| &f.path == path) {
                Some(file) => file.after = new.clone(),
                None => files.push(RewoundFile { path: path.clone(), before: old.clone(), after: new.clone() }),
            }
        }
    }
    files.retain(|f| f.before.as_deref() != Some(f.after.as_str()));
    files
}

/// A diff's (path, old text, new text); no old text: a new file.
type DiffText = (String, Option<String>, String);

fn diff_of(item: &Value) -> Option<DiffText> {
    if item.get("type")?.as_str()? != "diff" {
        return None;
    }
    let path = item.get("path")?.as_str()?.to_string();
    let old = item.get("oldText").and_then(Value::as_str).map(str::to_string);
    Some((path, old, item.get("newText")?.as_str()?.to_string()))
}

/// Sets each file back on disk where it still is as the agent left it; one changed since is a
/// conflict and stays. Blocking: run off the async threads.
pub fn restore(jail: &Jail, files: &[RewoundFile]) -> Restored {
    use crate::tools::files::{read_disk, write_disk};
    let mut done = Restored::default();
    for file in files {
        let now = match read_disk(jail, &file.path) {
            Ok((_, now)) => now,
            Err(e) => {
                tracing::warn!(path = %file.path, error = %e, "a rewind could not read a file");
                done.conflicts.push(file.path.clone());
                continue;
            }
        };
        if now == file.before {
            done.restored.push(file.path.clone());
            continue;
        }
        if now.as_deref() != Some(file.after.as_str()) {
            done.conflicts.push(file.path.clone());
            continue;
        }
        let outcome = match &file.before {
            Some(before) => write_disk(jail, &file.path, before).map(drop),
            None => jail.remove_file(&file.path).map(drop).map_err(Into::into),
        };
        match outcome {
            Ok(()) => done.restored.push(file.path.clone()),
            Err(e) => {
                tracing::warn!(path = %file.path, error = %e, "a rewind could not restore a file");
                done.conflicts.push(file.path.clone());
            }
        }
    }
    done
}

/// The answer's `_meta.corvid.rewind`: the files (`before` null: the agent created it) and,
/// after a restore in the core, what it did.
pub fn meta(files: &[RewoundFile], restored: Option<&Restored>) -> Value {
    let files: Vec<Value> =
        files.iter().map(|f| json!({ "path": f.path, "before": f.before, "after": f.after })).collect();
    let mut rewind = json!({ "files": files });
    if let Some(r) = restored {
        rewind["restored"] = json!(r.restored);
        rewind["conflicts"] = json!(r.conflicts);
    }
    rewind
}

/// What the fork's model is told, as the last message of its context.
pub fn note(files: &[RewoundFile], restored: Option<&Restored>) -> String {
    let mut text = String::from(
        "[The user rewound the conversation to this point: what you did and said after it is undone and gone from this conversation.",
    );
    let names = |paths: Vec<&str>| paths.join(", ");
    match restored {
        _ if files.is_empty() => text.push_str(" No file you had changed needed setting back."),
        Some(r) => {
            if !r.restored.is_empty() {
                text.push_str(&format!(" These files were set back to how they were here: {}.", names(r.restored.iter().map(String::as_str).collect())));
            }
            if !r.conflicts.is_empty() {
                text.push_str(&format!(" These were changed since and left as they are: {}.", names(r.conflicts.iter().map(String::as_str).collect())));
            }
        }
        None => text.push_str(&format!(
            " The files you changed after it ({}) were offered to the user to set back; the user may have kept their own later edits.",
            names(files.iter().map(|f| f.path.as_str()).collect())
        )),
    }
    text.push_str(" Read a file again before you edit it.]");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(id: &str, status: Option<&str>, diff: Option<(&str, Option<&str>, &str)>) -> ScopedUpdate {
        let mut u = json!({ "sessionUpdate": "tool_call_update", "toolCallId": id });
        if let Some(s) = status {
            u["status"] = json!(s);
        }
        if let Some((path, old, new)) = diff {
            u["content"] = json!([{ "type": "diff", "path": path, "oldText": old, "newText": new }]);
        }
        ("parent".to_string(), u.to_string())
    }

    #[test]
    fn a_file_goes_back_to_its_first_edits_old_text_and_failed_calls_do_not_count() {
        let events = vec![
            update("a", Some("pending"), Some(("/p/x.txt", Some("one"), "two"))),
            update("a", Some("completed"), None),
            update("b", None, Some(("/p/x.txt", Some("two"), "three"))),
            update("b", Some("completed"), None),
            update("c", Some("pending"), Some(("/p/y.txt", Some("y"), "Y"))),
            update("c", Some("failed"), None),
            update("d", Some("completed"), Some(("/p/new.txt", None, "fresh"))),
            update("e", Some("completed"), Some(("/p/same.txt", Some("s"), "t"))),
            update("f", Some("completed"), Some(("/p/same.txt", Some("t"), "s"))),
            // A subagent's call of the same id is its own call: its edit counts, after the parent's.
            ("child".to_string(), update("a", Some("completed"), Some(("/p/x.txt", Some("three"), "four"))).1),
        ];
        let files = rewound_files(&events);
        assert_eq!(
            files,
            vec![
                RewoundFile { path: "/p/x.txt".into(), before: Some("one".into()), after: "four".into() },
                RewoundFile { path: "/p/new.txt".into(), before: None, after: "fresh".into() },
            ]
        );
    }

    #[test]
    fn a_restore_sets_back_what_is_as_the_agent_left_it_and_keeps_what_changed_since() {
        let root = std::env::temp_dir().join(format!("corvid-rewind-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).expect("mkdir");
        let root = dunce::canonicalize(root).expect("canon");
        let jail = Jail::new(crate::roots::Roots::new(root.clone(), Vec::new()), Vec::new());
        std::fs::write(root.join("kept.txt"), "agent").expect("write");
        std::fs::write(root.join("mine.txt"), "the user's").expect("write");
        std::fs::write(root.join("made.txt"), "agent").expect("write");
        let file = |name: &str, before: Option<&str>| RewoundFile {
            path: root.join(name).display().to_string(),
            before: before.map(str::to_string),
            after: "agent".into(),
        };
        let files = [file("kept.txt", Some("original")), file("mine.txt", Some("original")), file("made.txt", None)];
        let done = restore(&jail, &files);
        assert_eq!(std::fs::read_to_string(root.join("kept.txt")).expect("read"), "original");
        assert_eq!(std::fs::read_to_string(root.join("mine.txt")).expect("read"), "the user's");
        assert!(!root.join("made.txt").exists());
        assert_eq!(done.restored, vec![files[0].path.clone(), files[2].path.clone()]);
        assert_eq!(done.conflicts, vec![files[1].path.clone()]);
        assert!(note(&files, Some(&done)).contains("left as they are"));
    }
}
