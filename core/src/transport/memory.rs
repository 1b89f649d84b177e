//! In-memory transport: the embedder (Node addon, tests) holds the other ends of the channels.

use tokio::sync::mpsc;

use super::{DEFAULT_MAX_MESSAGE_BYTES, Inbound, OUTGOING_CAPACITY, Transport};

/// The embedder's side of an in-memory connection.
pub struct MemoryPeer {
    /// Send one JSON-RPC message (a complete JSON text) to the agent.
    pub to_agent: mpsc::Sender<Inbound>,
    /// Receive the agent's messages, one JSON text each.
    pub from_agent: mpsc::Receiver<String>,
}

impl MemoryPeer {
    /// Convenience for embedders that hold text.
    pub async fn send(&self, message: impl Into<String>) -> Result<(), mpsc::error::SendError<Inbound>> {
        self.to_agent.send(Inbound::Frame(message.into().into_bytes())).await
    }
}

/// A connected pair: the [`Transport`] goes to `serve`, the [`MemoryPeer`] to the embedder.
/// Nothing here measures messages: the RPC layer answers one over `max_message_bytes` as
/// oversize (-32600), as stdio's line reader has it answered for lines it cut short.
pub fn memory(max_message_bytes: Option<usize>) -> (Transport, MemoryPeer) {
    let (in_tx, in_rx) = mpsc::channel(256);
    let (out_tx, out_rx) = mpsc::channel(OUTGOING_CAPACITY);
    (
        Transport {
            incoming: in_rx,
            outgoing: out_tx,
            max_message_bytes: max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
        },
        MemoryPeer { to_agent: in_tx, from_agent: out_rx },
    )
}
