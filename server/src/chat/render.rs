//! The terminal. [`Screen`] is the one writer of human text to stdout in the whole binary
//! (`corvid acp`'s stdout carries only ACP frames); [`Renderer`] turns `session/update`
//! notifications into compact lines on it.

use std::collections::HashMap;
use std::io::{IsTerminal, StdoutLock, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Lines of a diff shown before "… N more lines".
const DIFF_LINES: usize = 8;
/// Longest one-line summary (tool failures, titles).
const SUMMARY_CHARS: usize = 120;
/// Last lines of a command's output shown under its card.
const OUTPUT_LINES: usize = 6;

#[derive(Clone, Copy)]
pub enum Style {
    Plain,
    Dim,
    Bold,
    Red,
    Green,
    Yellow,
    Cyan,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Dim => "\x1b[2m",
            Style::Bold => "\x1b[1m",
            Style::Red => "\x1b[31m",
            Style::Green => "\x1b[32m",
            Style::Yellow => "\x1b[33m",
            Style::Cyan => "\x1b[36m",
        }
    }
}

/// Stdout (locked for the chat's lifetime) and stderr, with colours only on a terminal and
/// without `NO_COLOR`.
pub struct Screen {
    out: StdoutLock<'static>,
    color: bool,
    at_line_start: bool,
}

impl Screen {
    pub fn new() -> Self {
        let out = std::io::stdout();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { color: out.is_terminal() && !no_color, out: out.lock(), at_line_start: true }
    }

    /// Writes `text` as is (streamed answer text).
    pub fn write(&mut self, style: Style, text: &str) {
        if text.is_empty() {
            return;
        }
        let (on, off) = match (self.color, style) {
            (true, s) if !matches!(s, Style::Plain) => (s.code(), "\x1b[0m"),
            _ => ("", ""),
        };
        let _ = write!(self.out, "{on}{text}{off}");
        let _ = self.out.flush();
        self.at_line_start = text.ends_with('\n');
    }

    /// Starts a new line unless at the start of one.
    pub fn break_line(&mut self) {
        if !self.at_line_start {
            self.write(Style::Plain, "\n");
        }
    }

    /// A whole line of its own.
    pub fn line(&mut self, style: Style, text: &str) {
        self.break_line();
        self.write(style, text);
        self.write(Style::Plain, "\n");
    }

    /// Ends the current line with `text`.
    pub fn end_line(&mut self, style: Style, text: &str) {
        self.write(style, text);
        self.write(Style::Plain, "\n");
    }

    /// An error, on stderr (scripts using `-p` keep stdout for the answer).
    pub fn error(&mut self, text: &str) {
        self.break_line();
        let (on, off) = if self.color { (Style::Red.code(), "\x1b[0m") } else { ("", "") };
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{on}{text}{off}");
        let _ = err.flush();
    }
}

/// Which kind of streamed text was printed last (a change starts a new line).
#[derive(PartialEq, Clone, Copy)]
enum Block {
    None,
    Message,
    Thought,
}

#[derive(Default)]
struct ToolCard {
    title: String,
    /// The card's `kind` (`execute` cards show their output when they end).
    kind: String,
    status: String,
    diffs_shown: bool,
}

pub struct Renderer {
    pub screen: Screen,
    cwd: PathBuf,
    block: Block,
    tools: HashMap<String, ToolCard>,
}

impl Renderer {
    pub fn new(screen: Screen, cwd: PathBuf) -> Self {
        Self { screen, cwd, block: Block::None, tools: HashMap::new() }
    }

    /// One `session/update`'s `update` object.
    pub fn update(&mut self, update: &Value) {
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        match kind {
            "agent_message_chunk" => {
                if let Some(text) = content_text(update.get("content")) {
                    self.stream(Block::Message, Style::Plain, text);
                }
            }
            "agent_thought_chunk" => {
                if let Some(text) = content_text(update.get("content")) {
                    self.stream(Block::Thought, Style::Dim, text);
                }
            }
            "tool_call" => self.tool_call(update),
            "tool_call_update" => self.tool_call_update(update),
            "plan" => self.plan(update),
            "current_mode_update" => {
                if let Some(mode) = update.get("currentModeId").and_then(Value::as_str) {
                    self.note(&format!("mode: {mode}"));
                }
            }
            // user_message_chunk (replays), usage_update, available_commands_update,
            // config_option_update, session_info_update and anything newer: not shown.
            _ => {}
        }
    }

    fn stream(&mut self, block: Block, style: Style, text: &str) {
        if self.block != block {
            self.screen.break_line();
            if block == Block::Thought {
                self.screen.write(Style::Dim, "✻ ");
            }
            self.block = block;
        }
        self.screen.write(style, text);
    }

    /// Ends whatever was streaming; the next output starts on a fresh line.
    pub fn end_block(&mut self) {
        self.screen.break_line();
        self.block = Block::None;
    }

    pub fn note(&mut self, text: &str) {
        self.end_block();
        self.screen.line(Style::Dim, text);
    }

    fn tool_call(&mut self, update: &Value) {
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { return };
        let title = update.get("title").and_then(Value::as_str).unwrap_or("tool call");
        let kind = update.get("kind").and_then(Value::as_str).unwrap_or("other");
        self.end_block();
        self.screen.write(Style::Cyan, "⏺ ");
        self.screen.write(Style::Bold, &truncate(title, SUMMARY_CHARS));
        self.screen.end_line(Style::Dim, &format!(" ({kind})"));
        let card = ToolCard { title: title.to_string(), kind: kind.to_string(), ..ToolCard::default() };
        self.tools.insert(id.to_string(), card);
        self.tool_call_update(update);
    }

    fn tool_call_update(&mut self, update: &Value) {
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { return };
        let card = self.tools.entry(id.to_string()).or_default();
        if let Some(title) = update.get("title").and_then(Value::as_str) {
            card.title = title.to_string();
        }
        let content = update.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
        let status = update.get("status").and_then(Value::as_str).unwrap_or("");
        if status.is_empty() || status == card.status {
            return;
        }
        card.status = status.to_string();
        if card.kind == "execute" && matches!(status, "completed" | "failed") {
            let ok = status == "completed";
            self.command_ended(&content, update.get("rawOutput"), ok);
            return;
        }
        match status {
            "completed" => {
                let show_diffs = !card.diffs_shown;
                card.diffs_shown = true;
                self.end_block();
                self.screen.write(Style::Green, "  ✓ ");
                self.screen.end_line(Style::Dim, "done");
                if show_diffs {
                    self.diffs(&content);
                }
            }
            "failed" => {
                let first = content
                    .iter()
                    .find_map(|c| content_text(c.get("content")))
                    .and_then(|t| t.lines().find(|l| !l.trim().is_empty()))
                    .unwrap_or("failed");
                let first = truncate(first, SUMMARY_CHARS);
                self.end_block();
                self.screen.write(Style::Red, "  ✗ ");
                self.screen.end_line(Style::Plain, &first);
            }
            _ => {}
        }
    }

    /// A command's end: the last lines of its output (from the card's text, or from
    /// `rawOutput.output` when it ran in a terminal) and how it ended.
    fn command_ended(&mut self, content: &[Value], raw: Option<&Value>, ok: bool) {
        let text = content
            .iter()
            .find_map(|c| content_text(c.get("content")))
            .or_else(|| raw?.get("output")?.as_str())
            .unwrap_or("");
        let ending = match raw.and_then(|r| r.get("outcome")).and_then(Value::as_str) {
            Some(outcome) => outcome.to_string(),
            None if ok => "done".to_string(),
            // Refused, rejected or failed before it ran: the card's text says why.
            None => text.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed").to_string(),
        };
        self.end_block();
        if raw.and_then(|r| r.get("outcome")).is_some() {
            for line in command_tail(text) {
                self.screen.line(Style::Dim, &format!("    │ {}", truncate(line, SUMMARY_CHARS)));
            }
        }
        let (mark, style) = if ok { ("  ✓ ", Style::Green) } else { ("  ✗ ", Style::Red) };
        self.screen.write(style, mark);
        self.screen.end_line(if ok { Style::Dim } else { Style::Plain }, &truncate(&ending, SUMMARY_CHARS));
    }

    /// Diff items of a tool call's content, compactly.
    pub fn diffs(&mut self, content: &[Value]) {
        for item in content.iter().filter(|c| c.get("type").and_then(Value::as_str) == Some("diff")) {
            let path = item.get("path").and_then(Value::as_str).unwrap_or("?");
            let old = item.get("oldText").and_then(Value::as_str);
            let new = item.get("newText").and_then(Value::as_str).unwrap_or("");
            let shown = Path::new(path).strip_prefix(&self.cwd).map_or(path.into(), |p| p.display().to_string());
            let diff = compact_diff(old, new);
            let summary = match old {
                None => format!("    {shown} (new file, {})", plural(diff.added, "line")),
                Some(_) => format!("    {shown} (+{} -{})", diff.added, diff.removed),
            };
            self.screen.line(Style::Dim, &summary);
            for (sign, text) in &diff.lines {
                let style = if *sign == '-' { Style::Red } else { Style::Green };
                self.screen.line(style, &format!("    {sign} {}", truncate(text, SUMMARY_CHARS)));
            }
            if diff.more > 0 {
                self.screen.line(Style::Dim, &format!("    … {} more lines", diff.more));
            }
        }
    }

    fn plan(&mut self, update: &Value) {
        let entries = update.get("entries").and_then(Value::as_array).cloned().unwrap_or_default();
        self.end_block();
        self.screen.line(Style::Bold, "Plan:");
        for e in &entries {
            let text = e.get("content").and_then(Value::as_str).unwrap_or("");
            let (mark, style) = match e.get("status").and_then(Value::as_str) {
                Some("completed") => ("[x]", Style::Dim),
                Some("in_progress") => ("[~]", Style::Bold),
                _ => ("[ ]", Style::Plain),
            };
            self.screen.line(style, &format!("  {mark} {text}"));
        }
    }

    /// The title we know for a tool call (for permission questions without one).
    pub fn tool_title(&self, id: &str) -> Option<&str> {
        self.tools.get(id).map(|c| c.title.as_str())
    }

    /// Marks a tool call's diffs as shown (they were shown with the permission question).
    pub fn diffs_shown(&mut self, id: &str) {
        self.tools.entry(id.to_string()).or_default().diffs_shown = true;
    }
}

/// The text of a `ContentBlock` of type text.
fn content_text(content: Option<&Value>) -> Option<&str> {
    let c = content?;
    (c.get("type").and_then(Value::as_str) == Some("text")).then(|| c.get("text").and_then(Value::as_str))?
}

/// The last [`OUTPUT_LINES`] non-blank lines of a command's output, without the closing
/// `[exit code N]` line that Corvid adds for the model (the card's end says it).
fn command_tail(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.last().is_some_and(|l| l.starts_with('[') && l.ends_with(']')) {
        lines.pop();
    }
    let skip = lines.len().saturating_sub(OUTPUT_LINES);
    lines.split_off(skip)
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[derive(Debug, PartialEq)]
pub struct CompactDiff {
    /// The first few changed lines: '-' removed, '+' added.
    pub lines: Vec<(char, String)>,
    pub added: usize,
    pub removed: usize,
    /// Changed lines not in `lines`.
    pub more: usize,
}

/// A unified-ish diff for a glance: the common head and tail are dropped, the changed middle
/// shown as removed then added lines, cut after [`DIFF_LINES`].
pub fn compact_diff(old: Option<&str>, new: &str) -> CompactDiff {
    let old: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new: Vec<&str> = new.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..].iter().rev().zip(new[head..].iter().rev()).take_while(|(a, b)| a == b).count();
    let removed = &old[head..old.len() - tail];
    let added = &new[head..new.len() - tail];
    let all = removed.iter().map(|l| ('-', l.to_string())).chain(added.iter().map(|l| ('+', l.to_string())));
    let total = removed.len() + added.len();
    CompactDiff {
        lines: all.take(DIFF_LINES).collect(),
        added: added.len(),
        removed: removed.len(),
        more: total.saturating_sub(DIFF_LINES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_shows_its_last_lines_without_the_exit_note() {
        let out = "a\n\nb\nc\nd\ne\nf\ng\n[exit code 0]";
        assert_eq!(command_tail(out), vec!["b", "c", "d", "e", "f", "g"]);
        assert_eq!(command_tail("only\n"), vec!["only"]);
        assert!(command_tail("[exit code 1]").is_empty());
    }

    #[test]
    fn new_file_is_all_additions() {
        let d = compact_diff(None, "a\nb\n");
        assert_eq!(d.lines, vec![('+', "a".to_string()), ('+', "b".to_string())]);
        assert_eq!((d.added, d.removed, d.more), (2, 0, 0));
    }

    #[test]
    fn common_head_and_tail_are_dropped() {
        let d = compact_diff(Some("a\nb\nc\n"), "a\nB\nc\n");
        assert_eq!(d.lines, vec![('-', "b".to_string()), ('+', "B".to_string())]);
    }

    #[test]
    fn long_changes_are_cut() {
        let new: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let d = compact_diff(Some(""), &new);
        assert_eq!(d.lines.len(), DIFF_LINES);
        assert_eq!(d.more, 20 - DIFF_LINES);
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
