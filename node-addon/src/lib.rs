//! `corvid-node`: the Corvid core in-process for Node.js.
//!
//! Thin by design: each `NativeAgent` owns a tokio runtime and runs
//! `corvid_core::serve_with_store` over the core's in-memory transport, exactly what
//! `corvid acp` runs over stdio. JSON-RPC messages go in through `send` and come out through
//! a callback; no protocol logic lives here. `sandbox` is the launcher the agent's commands
//! run through.

// Public so the `#[napi]` export is reachable in test builds too, where napi registers nothing.
pub mod sandbox;

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use corvid_core::config::{Config, Env as ConfigEnv, ProcessEnv};
use corvid_core::rpc::CancellationToken;
use corvid_core::transport::Inbound;
use corvid_core::transport::memory::memory;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use tokio::sync::mpsc;

/// Options of `new NativeAgent(...)`; each overrides the matching `CORVID_*` variable.
#[napi(object)]
#[derive(Default, Clone)]
pub struct AgentOptions {
    /// Config file (`CORVID_CONFIG`).
    pub config_file: Option<String>,
    /// Data directory (`CORVID_DATA_DIR`).
    pub data_dir: Option<String>,
    /// Provider kind (`CORVID_PROVIDER`): `openai` (any OpenAI-compatible server) or `anthropic`.
    pub provider: Option<String>,
    /// Model id (`CORVID_MODEL`).
    pub model: Option<String>,
    /// OpenAI-compatible endpoint (`CORVID_BASE_URL`).
    pub base_url: Option<String>,
    /// API key (`CORVID_API_KEY`).
    pub api_key: Option<String>,
    /// Log filter (`CORVID_LOG`), e.g. `info` or `corvid_core=debug`. Logs go only to `onLog`.
    pub log_level: Option<String>,
    /// Session store: a file path or `none` (like `corvid acp --store`).
    pub store: Option<String>,
    /// How commands are confined: the program and leading arguments of the sandbox launcher,
    /// which is run as `<these> sandbox --policy <JSON> -- sh -c CMD` (`createAgent` passes
    /// this Node and `sandbox-launcher.cjs`). Empty: commands run unconfined.
    pub sandbox_launcher: Option<Vec<String>>,
    /// Variables the launcher needs (`createAgent`: `ELECTRON_RUN_AS_NODE=1`, so that an
    /// Electron host, VS Code's, runs the script as Node).
    pub sandbox_launcher_env: Option<HashMap<String, String>>,
    /// Read the config file again when no provider is usable, so a sign-in made meanwhile
    /// (`npx corvid-acp --login` in a terminal) works without a restart, as under `corvid acp`.
    /// Off by default: a host that passes its own settings never gets a key from the file.
    pub reread_config: Option<bool>,
}

/// Options first, then the process environment.
struct OptionsEnv<'a>(&'a AgentOptions);

impl ConfigEnv for OptionsEnv<'_> {
    fn var(&self, name: &str) -> Option<String> {
        let o = self.0;
        let own = match name {
            "CORVID_CONFIG" => &o.config_file,
            "CORVID_DATA_DIR" => &o.data_dir,
            "CORVID_PROVIDER" => &o.provider,
            "CORVID_MODEL" => &o.model,
            "CORVID_BASE_URL" => &o.base_url,
            "CORVID_API_KEY" => &o.api_key,
            "CORVID_LOG" => &o.log_level,
            _ => &None,
        };
        own.clone().filter(|v| !v.is_empty()).or_else(|| ProcessEnv.var(name))
    }
}

/// The interactive sign-in of `corvid login` (`corvid_core::login`), for `npx corvid-acp
/// --login`: prompts on stderr, answers from stdin, the provider saved to the config file that
/// `options` (then the environment) names. Blocks the calling thread until it is done: only for
/// a command-line entry point. Returns the file written.
#[napi]
pub fn login(options: Option<AgentOptions>) -> Result<String> {
    let options = options.unwrap_or_default();
    let path = corvid_core::login::login(&OptionsEnv(&options)).map_err(|e| Error::from_reason(e.to_string()))?;
    Ok(path.display().to_string())
}

/// How many calls may wait for Node's main thread in a callback's queue. When the main thread is
/// busy (a long synchronous task), the agent's messages wait here and then in the core's
/// bounded outgoing channel, and after that the turn waits (the model stream is read no
/// further): memory stays bounded however long JS is away, and nothing ever blocks the main
/// thread, which only drains the queue. Log lines that find the queue full are dropped.
const CALLBACK_QUEUE: usize = 256;

/// A weak callback with a bounded queue: it never keeps the Node process alive by itself.
type Callback = ThreadsafeFunction<String, (), String, Status, false, true, CALLBACK_QUEUE>;

/// One in-process ACP agent.
#[napi]
pub struct NativeAgent {
    to_agent: Mutex<Option<mpsc::Sender<Inbound>>>,
    shutdown: CancellationToken,
    /// Signalled when `serve` has returned (turns cancelled, store flushed and closed).
    done: Mutex<Option<std_mpsc::Receiver<()>>>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

#[napi]
impl NativeAgent {
    /// Starts an agent. `onMessage` receives each outgoing JSON-RPC message as JSON text, and
    /// one empty string once the agent has sent its last message; `onLog`, if given, receives
    /// formatted log lines.
    #[napi(constructor)]
    pub fn new(
        options: Option<AgentOptions>,
        on_message: Function<String, ()>,
        on_log: Option<Function<String, ()>>,
    ) -> Result<Self> {
        let options = options.unwrap_or_default();
        let mut config = Config::load_from(&OptionsEnv(&options)).map_err(|e| Error::from_reason(e.to_string()))?;
        if options.store.is_some() {
            config.store = options.store.clone();
        }
        if let Some(argv) = &options.sandbox_launcher {
            config.sandbox.launcher = sandbox::launcher(argv, options.sandbox_launcher_env.as_ref());
        }
        let on_message: Callback = on_message
            .build_threadsafe_function()
            .callee_handled::<false>()
            .weak::<true>()
            .max_queue_size::<CALLBACK_QUEUE>()
            .build()?;
        let on_log: Option<Callback> = match on_log {
            Some(f) => Some(
                f.build_threadsafe_function()
                    .callee_handled::<false>()
                    .weak::<true>()
                    .max_queue_size::<CALLBACK_QUEUE>()
                    .build()?,
            ),
            None => None,
        };

        // Logs of this agent's runtime threads go to its own callback only: each runtime
        // thread gets this agent's dispatcher as its default.
        let dispatch = log_dispatch(config.log.as_deref(), on_log);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("corvid-node")
            .enable_all()
            .on_thread_start(move || {
                // Kept for the thread's whole life.
                std::mem::forget(tracing::dispatcher::set_default(&dispatch));
            })
            .build()
            .map_err(|e| Error::from_reason(format!("cannot start the agent runtime: {e}")))?;

        let reread_config = options.reread_config.unwrap_or(false);
        let (transport, peer) = memory(Some(config.max_message_bytes));
        let shutdown = CancellationToken::new();
        let (done_tx, done_rx) = std_mpsc::channel();
        let serve_shutdown = shutdown.clone();
        runtime.spawn(async move {
            let store = corvid_core::open_store(&config);
            let options = corvid_core::ConnectionOptions { reread_config, ..Default::default() };
            corvid_core::serve_with_store(transport, config, store.clone(), options, serve_shutdown).await;
            // Closed as `corvid acp` closes its own: the next agent on this data dir opens it cheaply.
            corvid_core::close_store(store).await;
            let _ = done_tx.send(());
        });
        // Its own thread, not a runtime worker: a call waits there while the queue is full.
        let mut from_agent = peer.from_agent;
        std::thread::Builder::new()
            .name("corvid-node-out".into())
            .spawn(move || {
                while let Some(message) = from_agent.blocking_recv() {
                    if on_message.call(message, ThreadsafeFunctionCallMode::Blocking) != Status::Ok {
                        return; // the environment is going away
                    }
                }
                // End of stream: an empty message, after every real one (calls keep their order).
                on_message.call(String::new(), ThreadsafeFunctionCallMode::Blocking);
            })
            .map_err(|e| Error::from_reason(format!("cannot start the agent's message thread: {e}")))?;
        Ok(Self {
            to_agent: Mutex::new(Some(peer.to_agent)),
            shutdown,
            done: Mutex::new(Some(done_rx)),
            runtime: Mutex::new(Some(runtime)),
        })
    }

    /// Sends one JSON-RPC message (JSON text) to the agent.
    #[napi]
    pub fn send(&self, message: String) -> Result<()> {
        let guard = self.to_agent.lock().map_err(|_| Error::from_reason("agent state poisoned"))?;
        let Some(tx) = guard.as_ref() else {
            return Err(Error::from_reason("the agent is closed"));
        };
        match tx.try_send(Inbound::Frame(message.into_bytes())) {
            Ok(()) => Ok(()),
            // The dispatch loop is momentarily behind; wait for room (it never waits on us).
            Err(mpsc::error::TrySendError::Full(frame)) => {
                tx.blocking_send(frame).map_err(|_| Error::from_reason("the agent is closed"))
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Error::from_reason("the agent is closed")),
        }
    }

    /// Ends the input, as stdin closing ends `corvid acp`'s: the agent answers what it was
    /// sent, winds its connection down, and then sends its end-of-stream marker (the empty
    /// message). `close()` still shuts the runtime down after.
    #[napi]
    pub fn end_input(&self) {
        drop(self.to_agent.lock().ok().and_then(|mut g| g.take()));
    }

    /// Cancels running turns, flushes the store and shuts the runtime down. Resolves when
    /// all of that is done; safe to call twice.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<CloseTask> {
        let to_agent = self.to_agent.lock().ok().and_then(|mut g| g.take());
        drop(to_agent); // end of input: the connection winds down like stdin closing
        self.shutdown.cancel();
        AsyncTask::new(CloseTask {
            done: self.done.lock().ok().and_then(|mut g| g.take()),
            runtime: self.runtime.lock().ok().and_then(|mut g| g.take()),
        })
    }
}

/// The blocking part of `close()`, run on libuv's thread pool.
pub struct CloseTask {
    done: Option<std_mpsc::Receiver<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Task for CloseTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> Result<()> {
        if let Some(done) = self.done.take() {
            // serve() gives turns 600 ms to wind down twice over; never wait forever.
            let _ = done.recv_timeout(Duration::from_secs(3));
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_millis(500));
        }
        Ok(())
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> Result<()> {
        Ok(())
    }
}

/// A tracing dispatcher that formats events for `on_log` (or drops them).
fn log_dispatch(filter: Option<&str>, on_log: Option<Callback>) -> tracing::Dispatch {
    use tracing_subscriber::EnvFilter;
    let Some(on_log) = on_log else {
        return tracing::Dispatch::none();
    };
    let filter = EnvFilter::try_new(filter.unwrap_or("info")).unwrap_or_else(|_| EnvFilter::new("info"));
    let sink = std::sync::Arc::new(on_log);
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .without_time()
        .with_writer(move || LogLine { sink: sink.clone(), buf: Vec::new() })
        .finish();
    tracing::Dispatch::new(subscriber)
}

/// Collects one formatted event and hands it to JS when dropped.
struct LogLine {
    sink: std::sync::Arc<Callback>,
    buf: Vec<u8>,
}

impl Write for LogLine {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let line = String::from_utf8_lossy(&self.buf).trim_end().to_string();
        if !line.is_empty() {
            // Never waits (this runs wherever the log event was made): a full queue drops it.
            self.sink.call(line, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}
