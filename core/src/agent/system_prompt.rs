//! The client's `systemPrompt` (`session/new`, `load`, `resume`, `fork`): instructions that
//! are appended to Corvid's own system prompt (after the AGENTS.md files and the agent alias's
//! prompt) and saved with the session. Only the `append` mode is offered
//! (`sessionCapabilities.systemPrompt` without `mode.override`): Corvid's prompt carries the
//! tool rules and the roots, which an override would drop.

use agent_client_protocol_schema::v1 as acp;

use super::AgentError;

/// The text the model reads for `prompt`, or `None` when the client sent none (or only
/// blank text). Text blocks and embedded text resources are taken, in order; any other
/// block, and any mode but `append`, is an error naming the field.
pub fn client_text(method: &str, prompt: Option<&acp::SystemPrompt>) -> Result<Option<String>, AgentError> {
    let Some(prompt) = prompt else { return Ok(None) };
    match &prompt.mode {
        acp::SystemPromptMode::Append => {}
        other => {
            let mode = serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_string));
            return Err(AgentError::invalid_params(
                method,
                format!("systemPrompt.mode: `{}` is not supported (Corvid offers `append`)", mode.unwrap_or_default()),
            ));
        }
    }
    let mut parts = Vec::with_capacity(prompt.content.len());
    for (i, block) in prompt.content.iter().enumerate() {
        let text = match block {
            acp::ContentBlock::Text(t) => t.text.as_str(),
            acp::ContentBlock::Resource(r) => match &r.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => t.text.as_str(),
                _ => return Err(not_text(method, i)),
            },
            _ => return Err(not_text(method, i)),
        };
        if !text.trim().is_empty() {
            parts.push(text.trim_end());
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
}

fn not_text(method: &str, i: usize) -> AgentError {
    AgentError::invalid_params(
        method,
        format!("systemPrompt.content[{i}]: only text (or an embedded text resource) is supported"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(json: serde_json::Value) -> acp::SystemPrompt {
        serde_json::from_value(json).expect("a system prompt")
    }

    #[test]
    fn append_text_is_joined_and_blank_is_none() {
        let p = prompt(serde_json::json!({"mode": "append", "content": [
            {"type": "text", "text": "Answer in French.  \n"},
            {"type": "text", "text": "   "},
            {"type": "resource", "resource": {"uri": "file:///rules.md", "text": "Never push."}}
        ]}));
        assert_eq!(
            client_text("session/new", Some(&p)).ok().flatten().as_deref(),
            Some("Answer in French.\n\nNever push.")
        );
        let blank = prompt(serde_json::json!({"mode": "append", "content": [{"type": "text", "text": " "}]}));
        assert_eq!(client_text("session/new", Some(&blank)).ok().flatten(), None);
        assert!(matches!(client_text("session/new", None), Ok(None)));
    }

    #[test]
    fn override_and_images_are_refused_by_name() {
        let over = prompt(serde_json::json!({"mode": "override", "content": [{"type": "text", "text": "x"}]}));
        let err = client_text("session/new", Some(&over)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("systemPrompt.mode: `override`"), "{err}");
        let image = prompt(serde_json::json!({"mode": "append", "content": [
            {"type": "text", "text": "x"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}
        ]}));
        let err = client_text("session/load", Some(&image)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("systemPrompt.content[1]"), "{err}");
    }
}
