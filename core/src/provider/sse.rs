//! A minimal Server-Sent Events decoder: bytes in, complete `data` payloads out.

/// Incremental SSE decoder. Feed it bytes as they arrive; it yields each event's data
/// (multi-line `data:` fields joined with `\n`). Comments and other fields are ignored.
#[derive(Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    pub fn feed(&mut self, bytes: &[u8], mut on_event: impl FnMut(String)) {
        let mut rest = bytes;
        while let Some(n) = rest.iter().position(|b| *b == b'\n') {
            self.line.extend_from_slice(&rest[..n]);
            rest = &rest[n + 1..];
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.on_line(&line, &mut on_event);
        }
        self.line.extend_from_slice(rest);
    }

    /// End of stream: dispatch an event that was not terminated by a blank line.
    pub fn finish(&mut self, mut on_event: impl FnMut(String)) {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.on_line(&line, &mut on_event);
        }
        self.dispatch(&mut on_event);
    }

    fn on_line(&mut self, line: &[u8], on_event: &mut impl FnMut(String)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(String)) {
        if self.has_data {
            self.has_data = false;
            on_event(std::mem::take(&mut self.data));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_events_split_across_chunks() {
        let mut d = SseDecoder::default();
        let mut out = vec![];
        d.feed(b": keepalive\n\ndata: {\"a\"", |e| out.push(e));
        d.feed(b":1}\r\n\r\ndata: x\ndata: y\n\nevent: z\ndata: [DONE]", |e| out.push(e));
        d.finish(|e| out.push(e));
        assert_eq!(out, vec!["{\"a\":1}", "x\ny", "[DONE]"]);
    }
}
