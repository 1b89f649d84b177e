//! NDJSON framing over any byte reader, with a hard cap on line length.
//!
//! An oversize line is skipped as it streams past: only a short prefix is kept (for the
//! request id), so memory stays bounded whatever the peer sends.

use std::io::{self, BufRead};

use super::Inbound;

/// Bytes of an oversize line kept to recover its request id.
const PREFIX_KEEP: usize = 512;

/// Splits a byte stream into frames at `\n`, dropping a trailing `\r` and empty lines.
pub struct LineReader<R> {
    reader: R,
    max: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Self { reader, max, buf: Vec::new() }
    }

    /// The next frame, `Ok(None)` at end of input. A partial last line (no newline before
    /// EOF) is still delivered: the peer may have closed right after writing it.
    pub fn next_frame(&mut self) -> io::Result<Option<Inbound>> {
        let mut oversize: Option<usize> = None;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                // EOF
                let rest = std::mem::take(&mut self.buf);
                return Ok(match oversize {
                    Some(len) => Some(Inbound::TooLong { len, prefix: rest }),
                    None if trim_cr(&rest).is_empty() => None,
                    None => Some(Inbound::Frame(strip_cr(rest))),
                });
            }
            let newline = chunk.iter().position(|b| *b == b'\n');
            let take = newline.unwrap_or(chunk.len());
            match oversize.as_mut() {
                Some(len) => *len += take,
                None if self.buf.len() + take > self.max => {
                    let len = self.buf.len() + take;
                    let keep = PREFIX_KEEP.saturating_sub(self.buf.len()).min(take);
                    self.buf.extend_from_slice(&chunk[..keep]);
                    self.buf.truncate(PREFIX_KEEP);
                    oversize = Some(len);
                }
                None => self.buf.extend_from_slice(&chunk[..take]),
            }
            let consumed = newline.map_or(take, |n| n + 1);
            self.reader.consume(consumed);
            if newline.is_some() {
                let line = std::mem::take(&mut self.buf);
                if let Some(len) = oversize {
                    return Ok(Some(Inbound::TooLong { len, prefix: line }));
                }
                if trim_cr(&line).is_empty() {
                    continue;
                }
                return Ok(Some(Inbound::Frame(strip_cr(line))));
            }
        }
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    let mut s = line;
    while let [rest @ .., last] = s {
        if last.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    s
}

fn strip_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], max: usize, cap: usize) -> Vec<Inbound> {
        let reader = io::BufReader::with_capacity(cap, input);
        let mut lr = LineReader::new(reader, max);
        let mut out = vec![];
        while let Some(f) = lr.next_frame().expect("read") {
            out.push(f);
        }
        out
    }

    #[test]
    fn splits_lines_and_skips_blank_ones() {
        let out = frames(b"{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}", 100, 4);
        let texts: Vec<String> = out
            .into_iter()
            .map(|f| match f {
                Inbound::Frame(b) => String::from_utf8(b).expect("utf8"),
                Inbound::TooLong { .. } => panic!("unexpected oversize"),
            })
            .collect();
        assert_eq!(texts, vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    }

    #[test]
    fn oversize_line_is_reported_with_a_bounded_prefix_and_the_next_line_survives() {
        let mut input = b"{\"id\":7,\"x\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'a', 5000));
        input.extend_from_slice(b"\"}\n{\"ok\":true}\n");
        let out = frames(&input, 1000, 64);
        assert_eq!(out.len(), 2);
        match &out[0] {
            Inbound::TooLong { len, prefix } => {
                assert_eq!(*len, input.len() - "{\"ok\":true}\n".len() - 1);
                assert!(prefix.len() <= PREFIX_KEEP);
                assert!(prefix.starts_with(b"{\"id\":7"));
            }
            other => panic!("expected oversize, got {other:?}"),
        }
        assert!(matches!(&out[1], Inbound::Frame(b) if b == b"{\"ok\":true}"));
    }

    #[test]
    fn line_exactly_at_the_limit_is_accepted() {
        let out = frames(b"12345\n123456\n", 5, 3);
        assert!(matches!(&out[0], Inbound::Frame(b) if b == b"12345"));
        assert!(matches!(&out[1], Inbound::TooLong { len: 6, .. }));
    }
}
