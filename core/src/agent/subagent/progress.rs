//! A subagent's progress as its parent's tool card shows it to clients without the
//! `subagents` capability: one line per tool call of the child (its title and how it is
//! going), then the child's answer. Capped like a command's output: the last
//! [`MAX_LINES`] lines, and an answer of at most [`crate::tools::shell::OUTPUT_CAP`] bytes.

use crate::event::{Event, ToolStatus};

/// Tool-call lines kept on the card (the latest; earlier ones are counted).
pub const MAX_LINES: usize = 30;

struct Line {
    id: String,
    title: String,
    status: ToolStatus,
}

#[derive(Default)]
pub struct Progress {
    lines: Vec<Line>,
    /// Lines dropped from the front to stay within [`MAX_LINES`].
    dropped: usize,
    answer: Option<String>,
}

impl Progress {
    /// Takes in one of the child's events; returns whether the card changed.
    pub fn take(&mut self, event: &Event) -> bool {
        match event {
            Event::ToolStarted(start) => {
                self.lines.push(Line { id: start.id.clone(), title: start.title.clone(), status: ToolStatus::Pending });
                if self.lines.len() > MAX_LINES {
                    self.lines.remove(0);
                    self.dropped += 1;
                }
                true
            }
            Event::ToolChanged(patch) => {
                let Some(line) = self.lines.iter_mut().find(|l| l.id == patch.id) else { return false };
                let mut changed = false;
                if let Some(title) = &patch.title {
                    changed |= line.title != *title;
                    line.title = title.clone();
                }
                if let Some(status) = patch.status {
                    changed |= line.status != status;
                    line.status = status;
                }
                changed
            }
            _ => false,
        }
    }

    /// The child's final answer, shown below the lines (cut at the cap, on a char boundary).
    pub fn finish(&mut self, answer: &str) {
        let cap = crate::tools::shell::OUTPUT_CAP;
        let mut end = answer.len().min(cap);
        while !answer.is_char_boundary(end) {
            end -= 1;
        }
        let mut shown = answer[..end].to_string();
        if end < answer.len() {
            shown.push_str(&format!("\n… ({} more bytes)", answer.len() - end));
        }
        self.answer = Some(shown);
    }

    /// The card's text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if self.dropped > 0 {
            out.push_str(&format!("… {} earlier steps\n", self.dropped));
        }
        for line in &self.lines {
            let mark = match line.status {
                ToolStatus::Pending => "○",
                ToolStatus::Running => "◐",
                ToolStatus::Completed => "✓",
                ToolStatus::Failed => "✗",
            };
            out.push_str(&format!("{mark} {}\n", line.title));
        }
        if let Some(answer) = &self.answer {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(answer);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ToolKind, ToolPatch, ToolStart};

    fn start(id: &str, title: &str) -> Event {
        Event::ToolStarted(ToolStart {
            id: id.into(),
            name: "read_file".into(),
            title: title.into(),
            kind: ToolKind::Read,
            locations: vec![],
            raw_input: serde_json::Value::Null,
        })
    }

    #[test]
    fn lines_follow_the_calls_and_the_answer_comes_last() {
        let mut p = Progress::default();
        assert!(p.take(&start("a", "Read a.txt")));
        assert!(p.take(&start("b", "Run `ls`")));
        assert!(p.take(&Event::ToolChanged(ToolPatch::new("a").status(ToolStatus::Completed))));
        assert!(p.take(&Event::ToolChanged(ToolPatch::new("b").status(ToolStatus::Failed))));
        assert!(!p.take(&Event::ToolChanged(ToolPatch::new("b").status(ToolStatus::Failed))), "no change");
        assert!(!p.take(&Event::MessageChunk { message_id: "m".into(), text: "x".into() }));
        p.finish("All good.");
        assert_eq!(p.render(), "✓ Read a.txt\n✗ Run `ls`\n\nAll good.");
    }

    #[test]
    fn the_card_stays_within_its_caps() {
        let mut p = Progress::default();
        for i in 0..(MAX_LINES + 5) {
            p.take(&start(&format!("t{i}"), &format!("step {i}")));
        }
        let cap = crate::tools::shell::OUTPUT_CAP;
        p.finish(&"é".repeat(cap));
        let text = p.render();
        assert!(text.starts_with("… 5 earlier steps\n○ step 5\n"), "{}", &text[..60]);
        assert_eq!(text.lines().filter(|l| l.starts_with('○')).count(), MAX_LINES);
        assert!(text.len() < cap + 4096, "the answer is cut at the cap: {} bytes", text.len());
        assert!(text.ends_with(&format!("… ({} more bytes)", cap)), "{}", &text[text.len() - 40..]);
    }
}
