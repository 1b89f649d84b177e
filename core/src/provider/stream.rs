//! The streamed answer, whatever the provider: SSE framing, the stall timeout and the
//! "ended before it was complete" check are here; a [`Decode`] turns each event's data into
//! [`ModelEvent`]s.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::error::connect_reason;
use super::fault::PanicWatch;
use super::sse::SseDecoder;
use super::{ModelEvent, ProviderError};

/// A provider's stream format: one SSE `data` payload at a time.
pub(super) trait Decode: Send {
    fn decode(&mut self, payload: &str, out: &mut Events);
}

/// What decoding produced so far, and whether the answer is complete.
#[derive(Default)]
pub(super) struct Events {
    queue: VecDeque<Result<ModelEvent, ProviderError>>,
    /// The provider said the answer is complete (a finish reason, `[DONE]`, `message_stop`).
    finished: bool,
    /// The decoder needs nothing more from the body.
    ended: bool,
}

impl Events {
    pub fn push(&mut self, event: ModelEvent) {
        self.queue.push_back(Ok(event));
    }

    /// The answer is complete, though trailing events (usage) may still follow.
    pub fn finished(&mut self) {
        self.finished = true;
    }

    /// The answer is complete and the rest of the body is not needed.
    pub fn end(&mut self) {
        self.finished = true;
        self.ended = true;
    }

    /// A fatal error: reported once, after the events before it.
    pub fn fail(&mut self, e: ProviderError) {
        self.queue.push_back(Err(e));
        self.end();
    }

    #[cfg(test)]
    pub fn drain(&mut self) -> impl Iterator<Item = Result<ModelEvent, ProviderError>> + '_ {
        self.queue.drain(..)
    }
}

pub struct ChatStream {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    sse: SseDecoder,
    decoder: Box<dyn Decode>,
    events: Events,
    stall_timeout: Duration,
    /// The body ended, failed or stalled: nothing more will be read.
    body_done: bool,
    /// `CORVID_TEST_FAULT=panic-in-turn` only.
    fault: Option<PanicWatch>,
}

impl ChatStream {
    pub(super) fn new(resp: reqwest::Response, stall_timeout: Duration, decoder: Box<dyn Decode>) -> Self {
        let body = resp.bytes_stream().map(|r| r.map(|b| b.to_vec())).boxed();
        Self {
            body,
            sse: SseDecoder::default(),
            decoder,
            events: Events::default(),
            stall_timeout,
            body_done: false,
            fault: PanicWatch::start(),
        }
    }

    /// The next event; `None` once the stream has ended cleanly.
    pub async fn next(&mut self) -> Option<Result<ModelEvent, ProviderError>> {
        loop {
            if let Some(ev) = self.events.queue.pop_front() {
                if let (Some(watch), Ok(event)) = (&mut self.fault, &ev) {
                    watch.see(event);
                }
                return Some(ev);
            }
            if self.body_done || self.events.ended {
                return None;
            }
            let chunk = match tokio::time::timeout(self.stall_timeout, self.body.next()).await {
                Err(_) => {
                    self.body_done = true;
                    return Some(Err(ProviderError::Stalled(self.stall_timeout.as_secs())));
                }
                Ok(c) => c,
            };
            let mut payloads = Vec::new();
            match chunk {
                Some(Ok(bytes)) => self.sse.feed(&bytes, |p| payloads.push(p)),
                Some(Err(e)) => {
                    self.body_done = true;
                    return Some(Err(ProviderError::StreamError(connect_reason(&e))));
                }
                None => {
                    self.sse.finish(|p| payloads.push(p));
                    self.body_done = true;
                }
            }
            for payload in payloads {
                // Nothing after a fatal error or the decoder's end of the answer counts.
                if self.events.ended {
                    break;
                }
                self.decoder.decode(&payload, &mut self.events);
            }
            if (self.body_done || self.events.ended) && !self.events.finished {
                self.events.fail(ProviderError::Truncated);
            }
        }
    }
}
