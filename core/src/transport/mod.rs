//! Transports move whole frames between a peer and the RPC layer; they know nothing of JSON-RPC.
//!
//! A [`Transport`] is just a pair of channels. The stdio transport pumps them from threads
//! (so a blocked `read(2)` on stdin can never hold up runtime shutdown); the in-memory
//! transport hands the other ends to the embedder (the Node addon, tests).

pub mod lines;
pub mod memory;
pub mod stdio;

use tokio::sync::mpsc;

/// Default cap on one incoming message, in bytes (16 MiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Capacity of the outgoing frame queue. Bounded so a slow client slows the turn down
/// (back-pressure) instead of growing memory without limit.
pub const OUTGOING_CAPACITY: usize = 4096;

/// One unit read from the peer.
#[derive(Debug)]
pub enum Inbound {
    /// A complete message (one NDJSON line without its newline, or one channel message).
    /// Bytes, not `String`: invalid UTF-8 must reach the parser to be answered with -32700.
    Frame(Vec<u8>),
    /// A message longer than the limit. Only its first bytes were kept (`prefix`), so the
    /// request id can be recovered and the error routed to the waiting request.
    TooLong { len: usize, prefix: Vec<u8> },
}

/// The RPC layer's view of a connection: frames in, frames out.
pub struct Transport {
    pub incoming: mpsc::Receiver<Inbound>,
    pub outgoing: mpsc::Sender<String>,
    /// Cap on one message; the RPC layer reports it in errors.
    pub max_message_bytes: usize,
}
