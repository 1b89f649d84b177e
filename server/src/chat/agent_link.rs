//! The two ways to reach an agent. Either way the chat client sees JSON-RPC frames as strings:
//!
//! * in-process (default): the Corvid core runs on this process's runtime, connected over the
//!   core's in-memory transport (exactly what the Node addon does);
//! * `--agent "<command>"`: any ACP agent, spawned with `sh -c`, NDJSON over its stdin/stdout.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use corvid_core::Config;
use corvid_core::rpc::CancellationToken;
use corvid_core::transport::Inbound;
use corvid_core::transport::memory::memory;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The client's ends of a connection: frames to the agent, frames from it.
pub struct Frames {
    pub outgoing: mpsc::Sender<String>,
    pub incoming: mpsc::Receiver<String>,
}

/// Keeps the agent alive; [`Guard::close`] winds it down.
pub enum Guard {
    InProcess { shutdown: CancellationToken, served: JoinHandle<()> },
    Child { child: Box<tokio::process::Child>, writer: JoinHandle<()> },
}

/// Starts the core in-process (must be called inside the runtime).
pub fn in_process(config: Config) -> (Frames, Guard) {
    let (transport, peer) = memory(Some(config.max_message_bytes));
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(corvid_core::serve(transport, config, shutdown.clone()));
    let (out_tx, mut out_rx) = mpsc::channel::<String>(256);
    let to_agent = peer.to_agent;
    tokio::spawn(async move {
        while let Some(frame) = out_rx.recv().await {
            if to_agent.send(Inbound::Frame(frame.into_bytes())).await.is_err() {
                break;
            }
        }
    });
    (Frames { outgoing: out_tx, incoming: peer.from_agent }, Guard::InProcess { shutdown, served })
}

/// Spawns `command` through `sh -c`. Its stderr goes to `stderr_log` (so its logs cannot
/// garble the terminal), or to ours when there is no log file. It runs in its own process
/// group: Ctrl-C at the terminal is ours to turn into `session/cancel`, not a kill.
pub fn spawn(command: &str, stderr_log: Option<&Path>) -> anyhow::Result<(Frames, Guard)> {
    let stderr = match stderr_log {
        Some(path) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::inherit()),
        None => Stdio::inherit(),
    };
    let mut child = corvid_core::process::own_group(&mut corvid_core::process::shell(command))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start the agent `{command}`"))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        anyhow::bail!("the agent's stdio is not available");
    };

    let (out_tx, mut out_rx) = mpsc::channel::<String>(256);
    let writer = tokio::spawn(async move {
        while let Some(mut frame) = out_rx.recv().await {
            frame.push('\n');
            if stdin.write_all(frame.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                tracing::warn!("the agent closed its stdin");
                return;
            }
        }
    });
    let (in_tx, in_rx) = mpsc::channel::<String>(256);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => {
                    if in_tx.send(line).await.is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the agent's stdout failed");
                    return;
                }
            }
        }
    });
    Ok((Frames { outgoing: out_tx, incoming: in_rx }, Guard::Child { child: Box::new(child), writer }))
}

impl Guard {
    /// Ends the connection: cancels running turns in-process, or closes the child's stdin
    /// and kills it if it does not exit promptly.
    pub async fn close(self) {
        match self {
            Guard::InProcess { shutdown, served } => {
                shutdown.cancel();
                if tokio::time::timeout(Duration::from_secs(3), served).await.is_err() {
                    tracing::warn!("the in-process agent did not stop in time");
                }
            }
            Guard::Child { mut child, writer } => {
                writer.abort(); // drops the child's stdin: end of input
                let _ = writer.await;
                if tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_err() {
                    let _ = child.kill().await;
                }
            }
        }
    }
}
