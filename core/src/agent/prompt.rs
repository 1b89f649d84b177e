//! Turning a prompt's content blocks into what the model reads.

use agent_client_protocol_schema::v1 as acp;

use crate::rpc::RpcError;

/// Flattens the prompt into one user message. Text is passed through; embedded text
/// resources become tagged context; resource links are mentioned by uri. Images and audio
/// are refused because `promptCapabilities` does not advertise them yet.
pub fn user_text(blocks: &[acp::ContentBlock]) -> Result<String, RpcError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for (i, block) in blocks.iter().enumerate() {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::ResourceLink(link) => parts.push(format!("[{}]({})", link.name, link.uri)),
            acp::ContentBlock::Resource(res) => match &res.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("<context uri=\"{}\">\n{}\n</context>", t.uri, t.text));
                }
                _ => return Err(unsupported(i, "binary embedded resources")),
            },
            acp::ContentBlock::Image(_) => {
                return Err(unsupported(i, "image content (promptCapabilities.image is false)"));
            }
            acp::ContentBlock::Audio(_) => {
                return Err(unsupported(i, "audio content (promptCapabilities.audio is false)"));
            }
            _ => return Err(unsupported(i, "this content type")),
        }
    }
    if parts.iter().all(|p| p.trim().is_empty()) {
        return Err(RpcError::invalid_params("session/prompt", "prompt must contain some text"));
    }
    Ok(parts.join("\n\n"))
}

fn unsupported(index: usize, what: &str) -> RpcError {
    RpcError::invalid_params("session/prompt", format!("prompt[{index}]: {what} is not supported by Corvid yet"))
}
