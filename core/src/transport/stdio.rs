//! NDJSON over the process's stdin/stdout.
//!
//! Reader and writer are plain threads. The reader may sit in a blocking `read(2)` forever
//! (a client that never closes stdin); as a detached thread it cannot delay exit. The
//! writer batches: it flushes only when the queue is momentarily empty, so a burst of
//! updates costs one `write(2)` per buffer rather than one per message.

use std::io::{self, BufReader, BufWriter, IoSlice, Write};
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

/// Builds a transport over stdin/stdout. The I/O happens on two dedicated threads, which
/// start at once (a runtime is not needed until the transport is served).
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
        match unbuffered_stdout() {
            Ok(out) => write_frames(out_rx, out),
            Err(e) => {
                tracing::debug!(error = %e, "writing through std's stdout");
                write_frames(out_rx, io::stdout())
            }
        }
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

/// The process's stdout as a file of its own (a duplicate of the descriptor). `io::Stdout`
/// buffers by line, which means searching each write for its last newline: a whole frame of
/// megabytes (an edit's diff), for none. This writer has a buffer of its own.
fn unbuffered_stdout() -> io::Result<std::fs::File> {
    #[cfg(unix)]
    let owned = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?;
    #[cfg(windows)]
    let owned = std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned()?;
    Ok(std::fs::File::from(owned))
}

/// Writes each frame followed by `\n`, flushing whenever the queue runs dry.
pub(crate) fn write_frames(mut rx: mpsc::Receiver<String>, out: impl Write) {
    let mut out = BufWriter::with_capacity(64 * 1024, out);
    while let Some(frame) = rx.blocking_recv() {
        let mut next = Some(frame);
        while let Some(frame) = next.take() {
            if write_line(&mut out, frame.as_bytes()).is_err() {
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

/// `line` and a newline, in one `writev` when they go past the buffer (a frame larger than it
/// goes straight to the descriptor, and its newline with it, not in a write of its own).
fn write_line(out: &mut impl Write, line: &[u8]) -> io::Result<()> {
    let mut slices = [IoSlice::new(line), IoSlice::new(b"\n")];
    let mut left = &mut slices[..];
    while !left.is_empty() {
        match out.write_vectored(left) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut left, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most seven bytes a call, vectored or not, as a full pipe may.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(7);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frames_arrive_whole_and_one_per_line_through_short_writes() {
        let (tx, rx) = mpsc::channel(8);
        // Smaller and larger than the writer's buffer.
        let big = format!("{{\"text\":\"{}\"}}", "x".repeat(200_000));
        for frame in ["{\"a\":1}", &big, "{}"] {
            tx.try_send(frame.to_string()).expect("queued");
        }
        drop(tx);
        let mut out = Trickle(Vec::new());
        write_frames(rx, &mut out);
        assert_eq!(String::from_utf8(out.0).expect("UTF-8"), format!("{{\"a\":1}}\n{big}\n{{}}\n"));
    }
}
