//! The interactive sign-in and sign-out: store or remove a model provider in the config file.
//! `corvid login` / `corvid acp --login` (how an editor's terminal sign-in runs it) and
//! `npx corvid-acp --login` (the same through the Node addon) all run this one flow.
//!
//! Prompts go to stderr and answers come from stdin, so the flow works in a terminal and can
//! be scripted; the API key is read without echo when stdin is a terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use crate::config::{Config, ConfigError, Env};
use crate::config_file::{self, ProviderSettings};
use crate::provider::ProviderKind;

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("no config file location: set CORVID_CONFIG or HOME")]
    NoConfigPath,
    #[error("input ended before the sign-in was complete; nothing was saved")]
    InputEnded,
    #[error("reading the answer: {0}")]
    Input(#[from] std::io::Error),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

fn config_path(env: &dyn Env) -> Result<PathBuf, LoginError> {
    Config::file_path(env).0.ok_or(LoginError::NoConfigPath)
}

/// Asks questions on stderr, reads answers from stdin.
struct Prompter {
    input: std::io::StdinLock<'static>,
    out: std::io::Stderr,
}

impl Prompter {
    fn say(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// One answer; an empty answer takes `default`. EOF is an error (nothing is saved).
    fn ask(&mut self, question: &str, default: Option<&str>) -> Result<String, LoginError> {
        match default {
            Some(d) => self.say(&format!("{question} [{d}]: ")),
            None => self.say(&format!("{question}: ")),
        }
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Err(LoginError::InputEnded);
        }
        let answer = line.trim().to_string();
        Ok(if answer.is_empty() { default.unwrap_or_default().to_string() } else { answer })
    }

    /// Like `ask`, without echoing what is typed when stdin is a terminal.
    #[cfg(windows)]
    fn ask_secret(&mut self, question: &str) -> Result<String, LoginError> {
        if !std::io::stdin().is_terminal() {
            return self.ask(question, None);
        }
        self.say(&format!("{question}: "));
        Ok(rpassword::read_password()?.trim().to_string())
    }

    /// Like `ask`, without echoing what is typed when stdin is a terminal.
    #[cfg(unix)]
    fn ask_secret(&mut self, question: &str) -> Result<String, LoginError> {
        let stdin = std::io::stdin();
        let saved = if stdin.is_terminal() { nix::sys::termios::tcgetattr(&stdin).ok() } else { None };
        if let Some(original) = &saved {
            let mut quiet = original.clone();
            quiet.local_flags.remove(nix::sys::termios::LocalFlags::ECHO);
            let _ = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, &quiet);
        }
        let answer = self.ask(question, None);
        if let Some(original) = &saved {
            let _ = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, original);
            self.say("\n");
        }
        answer
    }
}

/// The interactive sign-in, with the config file and defaults `env` names. Current settings
/// are the defaults, so pressing Enter keeps them. Returns the file written.
pub fn login(env: &dyn Env) -> Result<PathBuf, LoginError> {
    let path = config_path(env)?;
    // A broken file must not stop the user from fixing it here: start from defaults then.
    let current = Config::load_from(env).ok().and_then(|c| c.provider);
    let mut p = Prompter { input: std::io::stdin().lock(), out: std::io::stderr() };
    p.say("Sign in to a model provider for Corvid.\n");
    let current_kind = current.as_ref().map_or(ProviderKind::OpenAi, |c| c.kind);
    let same_kind = |kind: ProviderKind| current.as_ref().filter(|c| c.kind == kind);
    let kind = loop {
        let answer = p.ask(
            "Provider (openai or anthropic; openai covers any OpenAI-compatible server)",
            Some(current_kind.as_str()),
        )?;
        if let Ok(kind) = answer.parse::<ProviderKind>() {
            break kind;
        }
        p.say("Please answer openai or anthropic.\n");
    };
    let default_url = match same_kind(kind) {
        Some(c) => c.base_url.clone(),
        None => kind.default_base_url().to_string(),
    };
    let base_url = p.ask("Base URL", Some(&default_url))?;
    let current_model = same_kind(kind).and_then(|c| c.model.clone());
    let model = loop {
        let model = p.ask("Model", current_model.as_deref())?;
        if !model.is_empty() {
            break model;
        }
        p.say("A model id is needed (e.g. gpt-4.1-mini or claude-sonnet-4-5).\n");
    };
    let has_key = current.as_ref().is_some_and(|c| c.api_key.is_some());
    let key_question = if has_key { "API key (Enter keeps the current one)" } else { "API key (Enter for none)" };
    let key = p.ask_secret(key_question)?;
    let settings = ProviderSettings {
        kind: kind.as_str().to_string(),
        base_url,
        model,
        api_key: (!key.is_empty()).then_some(key),
    };
    config_file::save_provider(&path, &settings)?;
    p.say(&format!("Saved to {} (readable only by you).\n", path.display()));
    Ok(path)
}

/// Removes the stored API key. Returns the file and whether there was a key.
pub fn logout(env: &dyn Env) -> Result<(PathBuf, bool), LoginError> {
    let path = config_path(env)?;
    let removed = config_file::remove_api_key(&path)?;
    Ok((path, removed))
}
