//! NDJSON over the process's stdin/stdout.
//!
//! Reader and writer are plain threads. The reader may sit in a blocking `read(2)` forever
//! (a client that never closes stdin); as a detached thread it cannot delay exit. The
//! writer batches: it flushes only when the queue is momentarily empty, so a burst of
//! updates costs one `write(2)` per buffer rather than one per message.

use std::io::{self, BufReader, BufWriter, Write};
use std::thread;

use tokio::sync::mpsc;

use super::lines::LineReader;
use super::{Inbound, OUTGOING_CAPACITY, Transport};

/// Handle on the writer thread; join it after `serve` returns so every frame is flushed.
pub struct StdioWriter {
    handle: thread::JoinHandle<()>,
}

impl StdioWriter {
    /// Waits until the writer has flushed everything queued before the transport was dropped.
    pub fn join(self) {
        if self.handle.join().is_err() {
            tracing::error!("stdout writer thread panicked");
        }
    }
}

/// Builds a transport over stdin/stdout. Must be called inside a tokio runtime only for the
/// channels' sake; the I/O itself happens on two dedicated threads.
pub fn stdio(max_message_bytes: usize) -> io::Result<(Transport, StdioWriter)> {
    let (in_tx, in_rx) = mpsc::channel::<Inbound>(256);
    let (out_tx, out_rx) = mpsc::channel::<String>(OUTGOING_CAPACITY);

    thread::Builder::new().name("corvid-stdin".into()).spawn(move || {
        let stdin = io::stdin();
        let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, stdin.lock()), max_message_bytes);
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => {
                    if in_tx.blocking_send(frame).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "stdin read failed; treating as end of input");
                    break;
                }
            }
        }
    })?;

    let handle = thread::Builder::new().name("corvid-stdout".into()).spawn(move || {
        widen_stdout_pipe();
        write_frames(out_rx, io::stdout())
    })?;

    Ok((Transport { incoming: in_rx, outgoing: out_tx, max_message_bytes }, StdioWriter { handle }))
}

/// Asks for a 1 MiB pipe when stdout is a pipe (Linux; unprivileged processes may go up to
/// `/proc/sys/fs/pipe-max-size`, 1 MiB by default). With the default 64 KiB, a frame of
/// megabytes (an edit's diff of a large file) crosses in dozens of fill-and-wait rounds with
/// the client's reader. Anything else (a file, a terminal, a refusal) keeps what it has.
fn widen_stdout_pipe() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::fcntl::fcntl(io::stdout(), nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20)) {
        tracing::debug!(error = %e, "stdout keeps its pipe size");
    }
}

/// Writes each frame followed by `\n`, flushing whenever the queue runs dry.
pub(crate) fn write_frames(mut rx: mpsc::Receiver<String>, out: impl Write) {
    let mut out = BufWriter::with_capacity(64 * 1024, out);
    while let Some(frame) = rx.blocking_recv() {
        let mut next = Some(frame);
        while let Some(frame) = next.take() {
            if out.write_all(frame.as_bytes()).and_then(|()| out.write_all(b"\n")).is_err() {
                tracing::warn!("stdout closed; dropping outgoing frames");
                return;
            }
            next = rx.try_recv().ok();
        }
        if out.flush().is_err() {
            tracing::warn!("stdout closed; dropping outgoing frames");
            return;
        }
    }
    let _ = out.flush();
}
