//! `corvid login` / `corvid logout` (and `corvid acp --login`, which is how an editor's
//! terminal sign-in runs it): store or remove a model provider in the config file.
//!
//! Prompts go to stderr and answers come from stdin, so the flow works in a terminal and can
//! be scripted; the API key is read without echo when stdin is a terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use corvid_core::config::{Config, ProcessEnv};
use corvid_core::config_file::{self, ProviderSettings};
use corvid_core::provider::ProviderKind;

fn config_path() -> anyhow::Result<PathBuf> {
    Config::file_path(&ProcessEnv).0.context("no config file location: set CORVID_CONFIG or HOME")
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
    fn ask(&mut self, question: &str, default: Option<&str>) -> anyhow::Result<String> {
        match default {
            Some(d) => self.say(&format!("{question} [{d}]: ")),
            None => self.say(&format!("{question}: ")),
        }
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            anyhow::bail!("input ended before the sign-in was complete; nothing was saved");
        }
        let answer = line.trim().to_string();
        Ok(if answer.is_empty() { default.unwrap_or_default().to_string() } else { answer })
    }

    /// Like `ask`, without echoing what is typed when stdin is a terminal.
    #[cfg(windows)]
    fn ask_secret(&mut self, question: &str) -> anyhow::Result<String> {
        if !std::io::stdin().is_terminal() {
            return self.ask(question, None);
        }
        self.say(&format!("{question}: "));
        Ok(rpassword::read_password()?.trim().to_string())
    }

    /// Like `ask`, without echoing what is typed when stdin is a terminal.
    #[cfg(unix)]
    fn ask_secret(&mut self, question: &str) -> anyhow::Result<String> {
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

/// The interactive sign-in. Current settings are the defaults, so pressing Enter keeps them.
pub fn login() -> anyhow::Result<()> {
    let path = config_path()?;
    // A broken file must not stop the user from fixing it here: start from defaults then.
    let current = Config::load().ok().and_then(|c| c.provider);
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
    Ok(())
}

/// Removes the stored API key.
pub fn logout() -> anyhow::Result<()> {
    let path = config_path()?;
    let removed = config_file::remove_api_key(&path)?;
    let mut err = std::io::stderr();
    let _ = if removed {
        writeln!(err, "Removed the API key from {}.", path.display())
    } else {
        writeln!(err, "No API key stored in {}.", path.display())
    };
    Ok(())
}
