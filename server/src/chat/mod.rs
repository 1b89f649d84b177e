//! `corvid chat`: a terminal client for people. By default it runs the core in-process (it
//! spawns nothing); `--agent "<command>"` drives any other ACP agent over stdio instead.
//!
//! The terminal is the UI: [`render::Screen`] is the only writer of human text to stdout in
//! this binary. `corvid acp` never writes anything but ACP frames there.

mod agent_link;
mod client;
mod input;
mod render;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use corvid_core::Config;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use client::{Client, Event, RemoteError};
use input::{Input, Lines};
use render::{Renderer, Screen, Style};

/// JSON-RPC code of ACP's auth_required: no model provider is configured.
const AUTH_REQUIRED: i64 = -32000;
/// Exit code after Ctrl-C ended a one-shot (`-p`) run.
const INTERRUPTED: u8 = 130;

#[derive(clap::Args)]
pub struct ChatArgs {
    /// Drive another ACP agent instead of the built-in core: a command run with `sh -c`,
    /// e.g. --agent "corvid acp" or --agent "npx some-acp-agent".
    #[arg(long, value_name = "COMMAND")]
    agent: Option<String>,
    /// Ask one question, print the answer and exit (non-zero if the turn failed).
    #[arg(short = 'p', long, value_name = "TEXT")]
    prompt: Option<String>,
    /// Working directory of the session (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Log file for the in-process core and the agent's stderr
    /// (default: $CORVID_DATA_DIR/chat.log).
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

pub fn run(args: ChatArgs) -> ExitCode {
    let mut screen = Screen::new();
    match start(args, &mut screen) {
        Ok(code) => code,
        Err(e) => {
            screen.error(&format!("corvid chat: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

fn start(args: ChatArgs, screen: &mut Screen) -> anyhow::Result<ExitCode> {
    // The in-process core needs the configuration; an external agent brings its own.
    let config = match (&args.agent, Config::load()) {
        (_, Ok(c)) => Some(c),
        (None, Err(e)) => return Err(e).context("loading configuration"),
        (Some(_), Err(_)) => None,
    };
    let log_file = args.log_file.clone().or_else(|| {
        let dir = &config.as_ref()?.data_dir;
        std::fs::create_dir_all(dir).ok()?;
        Some(dir.join("chat.log"))
    });
    if let Some(path) = &log_file {
        // Logs never go to the terminal: it is the UI. Without a file, there are none.
        let filter = config.as_ref().and_then(|c| c.log.as_deref());
        crate::init_logging(filter, Some(path))?;
    }
    let cwd = match &args.cwd {
        Some(dir) => std::path::absolute(dir).context("resolving --cwd")?,
        None => std::env::current_dir().context("reading the current directory")?,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("corvid-chat")
        .build()
        .context("starting the async runtime")?;
    let code = runtime.block_on(async {
        // From here on, Ctrl-C is ours (cancel the turn, or leave) rather than a kill.
        let sigint = interrupts().context("watching Ctrl-C")?;
        let (frames, guard) = match (&args.agent, config) {
            (Some(command), _) => agent_link::spawn(command, log_file.as_deref())?,
            (None, Some(config)) => agent_link::in_process(config),
            (None, None) => anyhow::bail!("no configuration"),
        };
        let (client, events) = Client::start(frames);
        let mut chat = Chat {
            client,
            events,
            lines: Lines::spawn(),
            sigint,
            ui: Renderer::new(std::mem::replace(screen, Screen::new()), cwd.clone()),
            session_id: String::new(),
            agent_label: args.agent.clone(),
        };
        let code = chat.run(&cwd, args.prompt.as_deref()).await;
        *screen = chat.ui.screen;
        drop(chat.client);
        guard.close().await;
        anyhow::Ok(code)
    })?;
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(code)
}

/// How a prompt turn ended.
enum Turn {
    Stopped(String),
    Failed,
    /// Ctrl-C twice, or the agent went away: leave.
    Quit,
}

/// Ctrl-C as it reaches the chat: SIGINT on Unix, the console's Ctrl-C event on Windows.
#[cfg(unix)]
type Interrupts = tokio::signal::unix::Signal;
#[cfg(windows)]
type Interrupts = tokio::signal::windows::CtrlC;

#[cfg(unix)]
fn interrupts() -> std::io::Result<Interrupts> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
}

#[cfg(windows)]
fn interrupts() -> std::io::Result<Interrupts> {
    tokio::signal::windows::ctrl_c()
}

struct Chat {
    client: Client,
    events: mpsc::UnboundedReceiver<Event>,
    lines: Lines,
    sigint: Interrupts,
    ui: Renderer,
    session_id: String,
    agent_label: Option<String>,
}

impl Chat {
    async fn run(&mut self, cwd: &std::path::Path, one_shot: Option<&str>) -> ExitCode {
        if let Err(code) = self.connect(cwd, one_shot.is_none()).await {
            return code;
        }
        if let Some(text) = one_shot {
            return match self.turn(text).await {
                Turn::Stopped(reason) if reason == "cancelled" => ExitCode::from(INTERRUPTED),
                Turn::Stopped(_) => ExitCode::SUCCESS,
                Turn::Failed | Turn::Quit => ExitCode::FAILURE,
            };
        }
        loop {
            self.ui.end_block();
            self.ui.screen.write(Style::Bold, "> ");
            let line = tokio::select! {
                line = self.lines.next() => line,
                _ = self.sigint.recv() => Input::Eof,
            };
            let text = match line {
                Input::Line(text) => text,
                Input::Eof => {
                    self.ui.screen.write(Style::Plain, "\n");
                    return ExitCode::SUCCESS;
                }
            };
            let text = text.trim();
            match text {
                "" => continue,
                "/quit" | "/exit" => return ExitCode::SUCCESS,
                _ => {}
            }
            if let Turn::Quit = self.turn(text).await {
                return ExitCode::FAILURE;
            }
        }
    }

    /// `initialize` and `session/new`; shows what the session runs on.
    async fn connect(&mut self, cwd: &std::path::Path, interactive: bool) -> Result<(), ExitCode> {
        let init = json!({
            "protocolVersion": 1,
            "clientInfo": { "name": "corvid-chat", "version": env!("CARGO_PKG_VERSION") },
            // No fs/terminal methods here: the agent must not call what we cannot do.
            "clientCapabilities": {},
        });
        let info = self.call("initialize", init).await.map_err(|e| self.fail("initialize", &e))?;
        if info.get("protocolVersion").and_then(Value::as_u64) != Some(1) {
            self.ui.note(&format!("warning: the agent speaks protocol version {}", info["protocolVersion"]));
        }
        let new = json!({ "cwd": cwd, "mcpServers": [] });
        let session = self.call("session/new", new).await.map_err(|e| self.fail("session/new", &e))?;
        self.session_id = session.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_string();

        let agent =
            info.pointer("/agentInfo/title").or_else(|| info.pointer("/agentInfo/name")).and_then(Value::as_str);
        let mut header = vec![agent.map_or_else(|| self.agent_label.clone().unwrap_or("agent".into()), str::to_string)];
        for option in session.get("configOptions").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(name), Some(value)) =
                (option.get("name").and_then(Value::as_str), option.get("currentValue").and_then(Value::as_str))
            {
                header.push(format!("{}: {value}", name.to_lowercase()));
            }
        }
        if interactive {
            header.push("Ctrl-C cancels a turn, Ctrl-D or /quit exits".into());
            self.ui.note(&header.join(" · "));
        }
        Ok(())
    }

    fn fail(&mut self, what: &str, e: &RemoteError) -> ExitCode {
        if e.code == AUTH_REQUIRED {
            // The agent's message says how to configure a provider.
            self.ui.screen.error(&e.message);
        } else {
            self.ui.screen.error(&format!("{what} failed: {e}"));
        }
        ExitCode::FAILURE
    }

    /// A request outside a turn; Ctrl-C gives up on it.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, RemoteError> {
        let response = self.client.request(method, params).await;
        tokio::select! {
            r = response => r,
            _ = self.sigint.recv() => Err(RemoteError { code: 0, message: "interrupted".into() }),
        }
    }

    /// One prompt turn: streams updates, asks permissions, Ctrl-C cancels.
    async fn turn(&mut self, text: &str) -> Turn {
        let params = json!({ "sessionId": self.session_id, "prompt": [{ "type": "text", "text": text }] });
        let mut response = self.client.request("session/prompt", params).await;
        let mut cancelling = false;
        let mut events_open = true;
        let result = loop {
            // Events first: the router queues every update before it hands over the response
            // that follows them, so an update is never lost to a response polled first.
            tokio::select! {
                biased;
                event = self.events.recv(), if events_open => match event {
                    Some(Event::Notification { method, params }) => {
                        if method == "session/update" && params.get("sessionId").and_then(Value::as_str) == Some(&self.session_id) {
                            self.ui.update(&params["update"]);
                        }
                    }
                    Some(Event::Permission { id, params }) => {
                        let (outcome, interrupted) = self.ask_permission(&params).await;
                        if interrupted && !cancelling {
                            self.cancel().await;
                            cancelling = true;
                        }
                        self.client.respond(id, json!({ "outcome": outcome })).await;
                    }
                    // The pending response fails next.
                    Some(Event::Closed) | None => events_open = false,
                },
                _ = self.sigint.recv() => {
                    if cancelling {
                        self.ui.note("interrupted");
                        return Turn::Quit;
                    }
                    self.cancel().await;
                    cancelling = true;
                }
                r = &mut response => break r,
            }
        };
        self.ui.end_block();
        match result {
            Ok(r) => {
                let reason = r.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn").to_string();
                match reason.as_str() {
                    "end_turn" => {}
                    "cancelled" => self.ui.screen.line(Style::Yellow, "⏹ cancelled"),
                    other => self.ui.screen.line(Style::Yellow, &format!("⏹ stopped: {other}")),
                }
                Turn::Stopped(reason)
            }
            Err(e) if e.code == client::CONNECTION_CLOSED => {
                self.ui.screen.error(&e.message);
                Turn::Quit
            }
            Err(e) => {
                self.ui.screen.error(&format!("error: {e}"));
                Turn::Failed
            }
        }
    }

    async fn cancel(&mut self) {
        self.ui.note("cancelling…");
        self.client.notify("session/cancel", json!({ "sessionId": self.session_id })).await;
    }

    /// Asks the user; returns the outcome and whether Ctrl-C was pressed.
    async fn ask_permission(&mut self, params: &Value) -> (Value, bool) {
        let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
        let call = &params["toolCall"];
        let id = call.get("toolCallId").and_then(Value::as_str).unwrap_or("");
        let title = call
            .get("title")
            .and_then(Value::as_str)
            .or_else(|| self.ui.tool_title(id))
            .unwrap_or("a tool call")
            .to_string();
        self.ui.end_block();
        self.ui.screen.write(Style::Yellow, "? ");
        self.ui.screen.end_line(Style::Bold, &format!("Allow {title}?"));
        if let Some(content) = call.get("content").and_then(Value::as_array)
            && content.iter().any(|c| c.get("type").and_then(Value::as_str) == Some("diff"))
        {
            self.ui.diffs(content);
            self.ui.diffs_shown(id);
        }
        let listed: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}) {}", i + 1, o.get("name").and_then(Value::as_str).unwrap_or("?")))
            .collect();
        self.ui.screen.line(Style::Plain, &format!("  {}", listed.join("  ")));
        self.lines.discard_typed_ahead();
        let cancelled = json!({ "outcome": "cancelled" });
        loop {
            self.ui.screen.write(Style::Bold, &format!("choose 1-{}: ", options.len()));
            let line = tokio::select! {
                line = self.lines.next() => line,
                _ = self.sigint.recv() => {
                    self.ui.screen.write(Style::Plain, "\n");
                    return (cancelled, true);
                }
            };
            match line {
                Input::Eof => {
                    self.ui.screen.write(Style::Plain, "\n");
                    return (cancelled, false);
                }
                Input::Line(answer) => {
                    if let Some(option_id) = input::choice(&answer, options.len())
                        .and_then(|i| options[i].get("optionId").and_then(Value::as_str))
                    {
                        return (json!({ "outcome": "selected", "optionId": option_id }), false);
                    }
                }
            }
        }
    }
}
