//! Reading the user's lines. One blocking thread owns stdin and feeds a channel, so the
//! prompt and the permission questions share one reader (and a blocked `read(2)` never holds
//! up exit).

use std::io::{BufRead, IsTerminal};

use tokio::sync::mpsc;

pub enum Input {
    Line(String),
    /// Ctrl-D at the start of a line, or the end of piped input.
    Eof,
}

pub struct Lines {
    rx: mpsc::UnboundedReceiver<Input>,
}

impl Lines {
    pub fn spawn() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = std::thread::Builder::new().name("corvid-chat-stdin".into()).spawn(move || {
            let stdin = std::io::stdin();
            // A terminal can go on after Ctrl-D; a pipe cannot.
            let tty = stdin.is_terminal();
            let mut lock = stdin.lock();
            loop {
                let mut line = String::new();
                let item = match lock.read_line(&mut line) {
                    Ok(0) => Input::Eof,
                    Ok(_) => Input::Line(line.trim_end_matches(['\n', '\r']).to_string()),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => Input::Eof,
                };
                let eof = matches!(item, Input::Eof);
                if tx.send(item).is_err() || (eof && !tty) {
                    return;
                }
            }
        });
        Self { rx }
    }

    /// The next line; `Eof` once input has ended (and forever after).
    pub async fn next(&mut self) -> Input {
        self.rx.recv().await.unwrap_or(Input::Eof)
    }

    /// Drops lines typed ahead, so a stray Enter cannot answer a question nobody saw yet.
    pub fn discard_typed_ahead(&mut self) {
        while let Ok(item) = self.rx.try_recv() {
            if matches!(item, Input::Eof) {
                break;
            }
        }
    }
}

/// Which option a typed answer picks (1-based number), if any.
pub fn choice(answer: &str, count: usize) -> Option<usize> {
    let n: usize = answer.trim().parse().ok()?;
    (1..=count).contains(&n).then(|| n - 1)
}

#[cfg(test)]
mod tests {
    use super::choice;

    #[test]
    fn choices_are_one_based_and_bounded() {
        assert_eq!(choice("1", 4), Some(0));
        assert_eq!(choice(" 4 ", 4), Some(3));
        assert_eq!(choice("5", 4), None);
        assert_eq!(choice("0", 4), None);
        assert_eq!(choice("yes", 4), None);
    }
}
