//! `CORVID_TEST_FAULT`: faults the e2e tests inject on purpose, here in the provider layer so
//! the agent carries no test hooks. Off unless set; each one is a single cheap check on a path
//! that exists anyway, so release builds carry it (the tests drive the release binary).

use std::sync::OnceLock;

use super::ModelEvent;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestFault {
    /// `panic-in-turn`: a model stream panics as soon as the text it has streamed contains
    /// [`TestFault::PANIC_MARKER`] (so only the turn the test scripts for it is hit). The
    /// panic comes out of [`super::ChatStream::next`], in the task of the turn reading it.
    PanicInTurn,
}

impl TestFault {
    pub const PANIC_MARKER: &'static str = "CORVID-TEST-PANIC";

    /// The fault this process runs with: `CORVID_TEST_FAULT`, read when the first model
    /// stream starts and kept.
    pub fn chosen() -> Option<TestFault> {
        static CHOSEN: OnceLock<Option<TestFault>> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            std::env::var("CORVID_TEST_FAULT").ok().filter(|v| !v.is_empty()).and_then(|v| Self::parse(&v))
        })
    }

    fn parse(value: &str) -> Option<Self> {
        match value {
            "panic-in-turn" => Some(TestFault::PanicInTurn),
            other => {
                tracing::warn!(value = other, "unknown CORVID_TEST_FAULT; ignored");
                None
            }
        }
    }
}

/// One stream's text so far, watched for [`TestFault::PANIC_MARKER`]; exists only while
/// `panic-in-turn` is on.
pub(super) struct PanicWatch {
    streamed: String,
}

impl PanicWatch {
    pub fn start() -> Option<Self> {
        (TestFault::chosen() == Some(TestFault::PanicInTurn)).then(|| PanicWatch { streamed: String::new() })
    }

    /// Called with each event before the stream hands it out.
    pub fn see(&mut self, event: &ModelEvent) {
        if let ModelEvent::Text(text) = event {
            self.streamed.push_str(text);
            if self.streamed.contains(TestFault::PANIC_MARKER) {
                panic!("test fault: panic-in-turn");
            }
        }
    }
}
