//! The `corvid` command: `corvid chat` is the terminal client for people, `corvid acp`
//! serves ACP over stdio for editors.
//!
//! Under `corvid acp`, stdout belongs to the protocol: nothing prints there except `--help`
//! and `--version` (clap), which never run together with a connection. Only `corvid chat`
//! writes human text to stdout, through its one writer, `chat::render::Screen`.

mod bridge;
mod chat;
mod serve;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use corvid_core::Config;
use corvid_core::rpc::CancellationToken;
use corvid_core::transport::stdio::stdio;
use tracing_subscriber::EnvFilter;

mod login;

const AFTER_HELP: &str = r#"Chat in the terminal (the agent runs in-process; nothing is spawned):

  corvid chat                       interactive; Ctrl-C cancels a turn, Ctrl-D or /quit exits
  corvid chat -p "explain main.rs"  one question, answer on stdout, then exit
  corvid chat --agent "other-agent --acp"   drive any other ACP agent over stdio

Hook Corvid into an editor (it speaks ACP over stdio):

  Zed — settings.json:
    "agent_servers": {
      "Corvid": { "command": "corvid", "args": ["acp"], "env": { "CORVID_MODEL": "gpt-4.1-mini" } }
    }

  JetBrains IDEs (AI Assistant → Agents → Add custom agent) — ~/.jetbrains/acp.json:
    { "agent_servers": { "Corvid": { "command": "/path/to/corvid", "args": ["acp"] } } }

Serve remote clients over WebSocket, and bridge an editor to such a server:

  corvid serve --listen 0.0.0.0:8765 --tls-cert cert.pem --tls-key key.pem --token-file token
  corvid acp --connect wss://host:8765/acp --token-file token [--agent ALIAS] [--ca-cert ca.pem]

Model provider (environment, overriding ~/.config/corvid/config.toml or $CORVID_CONFIG):
  CORVID_PROVIDER   openai (any OpenAI-compatible Chat Completions server), openai-responses
                    (OpenAI's Responses API; codex models get it by themselves on api.openai.com)
                    or anthropic (Messages API)
  CORVID_BASE_URL   e.g. https://api.openai.com/v1, https://openrouter.ai/api/v1, http://127.0.0.1:11434/v1;
                    Anthropic's with or without /v1. Order: CORVID_BASE_URL, the config file's
                    base_url, then OPENAI_BASE_URL or ANTHROPIC_BASE_URL (per provider)
  CORVID_API_KEY    API key (falls back to OPENAI_API_KEY, or ANTHROPIC_API_KEY for anthropic)
  CORVID_MODEL      model id
  CORVID_DATA_DIR   where Corvid keeps its data
  CORVID_LOG        log filter, e.g. info or corvid_core=debug (acp: logs go to stderr;
                    chat: to $CORVID_DATA_DIR/chat.log)
With nothing configured, Corvid uses a local Ollama at http://127.0.0.1:11434 if one answers."#;

#[derive(Parser)]
#[command(
    name = "corvid",
    version,
    about = "Corvid: a coding agent for the terminal (`corvid chat`) and any editor that speaks the Agent Client Protocol (`corvid acp`)"
)]
#[command(after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Chat in the terminal: runs the agent in-process (or drives any ACP agent with --agent).
    Chat(chat::ChatArgs),
    /// Serve ACP over stdio (newline-delimited JSON-RPC); this is what editors run.
    Acp {
        /// Write logs to this file instead of stderr.
        #[arg(long, value_name = "FILE")]
        log_file: Option<PathBuf>,
        /// Session store: a SQLite file path or sqlite://PATH (default: $CORVID_DATA_DIR/sessions.db),
        /// postgres://USER[:PASSWORD]@HOST[:PORT]/DB (shared by several processes); `none` keeps
        /// sessions in memory.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Run the interactive sign-in instead of serving (what an editor's terminal sign-in runs).
        #[arg(long)]
        login: bool,
        /// Relay stdio to a remote `corvid serve` instead of running the agent here
        /// (wss://host:port/acp; ws:// only for loopback).
        #[arg(long, value_name = "URL", conflicts_with_all = ["store", "login"])]
        connect: Option<String>,
        /// With --connect: file holding the server's bearer token (else $CORVID_TOKEN).
        #[arg(long, value_name = "FILE", requires = "connect")]
        token_file: Option<PathBuf>,
        /// With --connect: the server-side agent alias for this connection's sessions.
        #[arg(long, value_name = "ALIAS", requires = "connect")]
        agent: Option<String>,
        /// With --connect: also trust this CA certificate (PEM), e.g. a self-signed server's.
        #[arg(long, value_name = "FILE", requires = "connect")]
        ca_cert: Option<PathBuf>,
    },
    /// Serve ACP over WebSocket (`/acp`, one ACP connection per socket) for remote clients.
    Serve(serve::ServeArgs),
    /// Sign in: choose a provider, base URL, model and API key, saved to the config file (mode 0600).
    Login,
    /// Remove the stored API key from the config file.
    Logout,
    /// Internal: run the command confined to a sandbox policy and supervise it (how Corvid
    /// runs the commands the model asks for; `corvid_core::sandbox::supervise`).
    #[command(hide = true)]
    Sandbox {
        /// The policy, as JSON (`corvid_core::sandbox::Policy`); without it, the one in
        /// `CORVID_SANDBOX_POLICY` (how an editor's terminal gets it).
        #[arg(long, value_name = "JSON")]
        policy: Option<String>,
        /// The program and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<OsString>,
    },
}

fn main() -> std::process::ExitCode {
    // `corvid acp` and nothing else is how editors start Corvid, and every millisecond before
    // `initialize` is answered counts there: clap building its command tree to parse those
    // two words took ~120 µs of that. Any other command line goes through clap.
    if is_bare_acp(std::env::args_os().skip(1)) {
        return exit_code(run_acp(None, None));
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Chat(args) => chat::run(args),
        Command::Acp { login: true, .. } | Command::Login => exit_code(login::login()),
        Command::Logout => exit_code(login::logout()),
        Command::Acp { log_file, connect: Some(url), token_file, agent, ca_cert, .. } => {
            exit_code(bridge::run(bridge::ConnectArgs { url, token_file, agent, ca_cert, log_file }))
        }
        Command::Acp { log_file, store, login: false, connect: None, .. } => exit_code(run_acp(log_file, store)),
        Command::Serve(args) => exit_code(serve::run(args)),
        Command::Sandbox { policy, command } => corvid_core::sandbox::supervise(policy.as_deref(), &command).into(),
    }
}

/// Whether the arguments are exactly `acp` (what clap would parse into `Command::Acp` with
/// every option left unset).
fn is_bare_acp(mut args: impl Iterator<Item = OsString>) -> bool {
    args.next().is_some_and(|first| first == "acp") && args.next().is_none()
}

fn exit_code(result: anyhow::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            write_stderr(&format!("corvid: {e:#}\n"));
            std::process::ExitCode::FAILURE
        }
    }
}

#[allow(clippy::print_stderr)]
pub(crate) fn write_stderr(msg: &str) {
    eprint!("{msg}");
}

pub(crate) fn init_logging(filter: Option<&str>, log_file: Option<&PathBuf>) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(filter.unwrap_or("warn")).unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder.with_ansi(false).with_writer(std::sync::Mutex::new(file)).init();
        }
        None => builder.with_ansi(std::io::stderr().is_terminal()).with_writer(std::io::stderr).init(),
    }
    Ok(())
}

fn run_acp(log_file: Option<PathBuf>, store: Option<String>) -> anyhow::Result<()> {
    // A missing or broken config file is reported through ACP (`initialize`'s auth method,
    // `session/new`'s error), so the editor can show it; exiting here would leave it guessing.
    let mut config = Config::load_or_problem(&corvid_core::config::ProcessEnv);
    if store.is_some() {
        config.store = store;
    }
    init_logging(config.log.as_deref(), log_file.as_ref())?;
    if let Some(problem) = &config.problem {
        tracing::error!("{problem}");
    }
    // Before the runtime: the client writes `initialize` as soon as it has spawned us, and the
    // reader thread frames it while the runtime starts.
    let (transport, writer) = stdio(config.max_message_bytes).context("opening stdio")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("corvid-worker")
        .build()
        .context("starting the async runtime")?;

    runtime.block_on(async {
        let store = corvid_core::open_store(&config);
        let shutdown = CancellationToken::new();
        spawn_signal_watch(shutdown.clone());
        // A terminal sign-in the client runs beside us is picked up without a restart.
        let options = corvid_core::ConnectionOptions { reread_config: true, ..Default::default() };
        corvid_core::serve_with_store(transport, config, store.clone(), options, shutdown).await;
        corvid_core::close_store(store).await;
    });
    // Stragglers (a provider request mid-flight) must not hold up exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    join_with_deadline(writer, Duration::from_millis(500));
    Ok(())
}

/// SIGTERM, SIGINT and SIGHUP end the connection like a closed stdin does.
#[cfg(unix)]
pub(crate) fn spawn_signal_watch(shutdown: CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        // SIGHUP is what Emacs (and a closed terminal) sends: the same orderly stop as SIGTERM.
        let watched = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()));
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = watched else {
            tracing::warn!("cannot watch for signals");
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM; shutting down"),
            _ = int.recv() => tracing::info!("SIGINT; shutting down"),
            _ = hup.recv() => tracing::info!("SIGHUP; shutting down"),
        }
        shutdown.cancel();
    });
}

/// On Windows: Ctrl-C, Ctrl-Break and the console closing (what stands for SIGINT and SIGHUP
/// there) end the connection like a closed stdin does.
#[cfg(windows)]
pub(crate) fn spawn_signal_watch(shutdown: CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
        let (Ok(mut c), Ok(mut brk), Ok(mut close)) = (ctrl_c(), ctrl_break(), ctrl_close()) else {
            tracing::warn!("cannot watch for console events");
            return;
        };
        tokio::select! {
            _ = c.recv() => tracing::info!("Ctrl-C; shutting down"),
            _ = brk.recv() => tracing::info!("Ctrl-Break; shutting down"),
            _ = close.recv() => tracing::info!("console closed; shutting down"),
        }
        shutdown.cancel();
    });
}

/// Waits for the stdout writer to flush, but never longer than `deadline` (a client that
/// stopped reading must not keep us alive).
pub(crate) fn join_with_deadline(writer: corvid_core::transport::stdio::StdioWriter, deadline: Duration) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        writer.join();
        let _ = tx.send(());
    });
    if rx.recv_timeout(deadline).is_err() {
        tracing::warn!("stdout did not drain in time; exiting anyway");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> std::vec::IntoIter<OsString> {
        words.iter().map(OsString::from).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn the_bare_acp_fast_path_is_taken_only_for_what_clap_parses_to_a_plain_acp() {
        assert!(is_bare_acp(args(&["acp"])));
        for other in
            [&[][..], &["acp", "--store", "none"], &["acp", "--login"], &["chat"], &["--version"], &["acp", "acp"]]
        {
            assert!(!is_bare_acp(args(other)), "{other:?}");
        }
        // The fast path runs `run_acp(None, None)`: what clap makes of the same words.
        let parsed = Cli::try_parse_from(["corvid", "acp"]).expect("`corvid acp` parses");
        assert!(matches!(
            parsed.command,
            Command::Acp {
                log_file: None,
                store: None,
                login: false,
                connect: None,
                token_file: None,
                agent: None,
                ca_cert: None
            }
        ));
    }
}
