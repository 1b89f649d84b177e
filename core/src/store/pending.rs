//! A store being opened in the background, and what may be said of it before the open ends.
//!
//! `initialize` tells the client whether sessions can be loaded (`loadSession`, `session/list`,
//! …), which takes a store that opens. Waiting for the open itself put SQLite's connection on
//! `initialize`'s path at every start (it ends ~0.4 ms after the answer could go out, measured
//! from `main`). A file that a start of this build checked says so in its header, and in every
//! copy of the header in its log ([`super::stamp`]): then the open is as sure as a capability
//! can be, and `initialize` answers from that promise while the connection is made; everything
//! that uses the store still awaits the open itself. Any other file, a new one, or PostgreSQL
//! is awaited.

use std::future::IntoFuture;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use super::Store;

/// The open, as `open_store` hands it over.
pub type Open = BoxFuture<'static, Result<Store, String>>;

/// The open's result, once, to everyone who awaits it (`.await` a clone), and the promise
/// `initialize` may answer from.
#[derive(Clone)]
pub struct PendingStore {
    result: Shared<Open>,
    /// Where the store is, when its file promised that it will open ([`super::will_open`]).
    promised: Option<Arc<str>>,
}

/// The store as `initialize` reports it.
pub enum Outlook {
    Open(Store),
    /// Still opening, on a file that promised to open (see the module's comment).
    Opening(Arc<str>),
    Unavailable(String),
}

impl PendingStore {
    /// Starts `open` at once: on the caller's thread up to its first wait, unless `promised`
    /// (nobody waits for it then), and on a task after that.
    pub fn start(open: Open, promised: Option<String>) -> Self {
        let result = open.shared();
        if promised.is_some() {
            tokio::spawn(result.clone());
        } else {
            // `initialize` waits for this open: its first steps (the data directory, the
            // file's header, the pool, SQLite's thread) run here instead of whenever a runtime
            // worker first picks the task up (~100 µs at process start).
            let mut first = result.clone();
            if (&mut first).now_or_never().is_none() {
                tokio::spawn(first);
            }
        }
        Self { result, promised: promised.map(Arc::from) }
    }

    /// What `initialize` says: the open's result if it has one, else the file's promise, else
    /// the result once the open ends. (`peek`, not a poll: a poll here could run the open's
    /// first steps on this request's path, if no worker has picked its task up yet.)
    pub async fn outlook(&self) -> Outlook {
        let result = match (self.result.peek(), &self.promised) {
            (Some(result), _) => result.clone(),
            (None, Some(location)) => return Outlook::Opening(location.clone()),
            (None, None) => self.result.clone().await,
        };
        match result {
            Ok(store) => Outlook::Open(store),
            Err(reason) => Outlook::Unavailable(reason),
        }
    }
}

impl IntoFuture for PendingStore {
    type Output = Result<Store, String>;
    type IntoFuture = Shared<Open>;

    fn into_future(self) -> Self::IntoFuture {
        self.result
    }
}

impl Outlook {
    /// Whether the methods that need a store are offered.
    pub fn is_available(&self) -> bool {
        !matches!(self, Outlook::Unavailable(_))
    }

    /// `initialize`'s `_meta.corvid.store`.
    pub fn meta(&self) -> serde_json::Value {
        match self {
            Outlook::Open(store) => serde_json::json!({ "status": "open", "location": store.location() }),
            Outlook::Opening(location) => serde_json::json!({ "status": "opening", "location": &**location }),
            Outlook::Unavailable(reason) => serde_json::json!({ "status": "unavailable", "reason": reason }),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;
    use crate::store::Location;

    /// An open that ends when the test says, with what it says.
    fn open_when_told() -> (oneshot::Sender<Result<Store, String>>, Open) {
        let (tx, rx) = oneshot::channel();
        (tx, async move { rx.await.unwrap_or_else(|_| Err("never told".into())) }.boxed())
    }

    #[tokio::test]
    async fn a_promise_answers_initialize_at_once_and_everything_else_awaits_the_open() {
        let (tell, open) = open_when_told();
        let pending = PendingStore::start(open, Some("/data/sessions.db".into()));
        let outlook = pending.outlook().now_or_never().expect("answered without waiting for the open");
        assert!(outlook.is_available());
        assert_eq!(outlook.meta(), serde_json::json!({ "status": "opening", "location": "/data/sessions.db" }));

        let mut store = pending.clone().into_future();
        assert!((&mut store).now_or_never().is_none(), "the store itself is not there yet");
        // A promise the open then breaks (the disk failed in between): from then on, the result.
        let _ = tell.send(Err("disk I/O error".into()));
        assert_eq!(store.await.err().as_deref(), Some("disk I/O error"));
        let outlook = pending.outlook().await;
        assert!(!outlook.is_available());
        assert_eq!(outlook.meta(), serde_json::json!({ "status": "unavailable", "reason": "disk I/O error" }));
    }

    #[tokio::test]
    async fn without_a_promise_initialize_waits_for_the_open() {
        let (tell, open) = open_when_told();
        let pending = PendingStore::start(open, None);
        let mut outlook = pending.outlook().boxed();
        assert!((&mut outlook).now_or_never().is_none(), "nothing promised: the open is awaited");
        let _ = tell.send(Err("not a database".into()));
        assert!(!outlook.await.is_available());

        // Once it has opened, it says so, promise or not.
        let dir = std::env::temp_dir().join(format!("corvid-pending-{}", uuid::Uuid::new_v4()));
        let location = Location::File(dir.join("sessions.db"));
        let open = async move { Store::open(&location).await.map_err(|e| e.to_string()) }.boxed();
        let pending = PendingStore::start(open, None);
        let outlook = pending.outlook().await;
        assert_eq!(outlook.meta()["status"], "open");
        if let Outlook::Open(store) = outlook {
            store.close().await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
