//! NDJSON framing: `LineReader` over arbitrary bytes, read through buffers of every size, with
//! every frame handed to the envelope parser.
//!
//! Property: the frames are exactly those of a simple reference split (lines at `\n`, one
//! trailing `\r` dropped, blank lines skipped, lines over the limit reported as oversize with a
//! bounded prefix of the line), whatever the read chunking.
#![no_main]

use std::io::BufReader;

use corvid_core::rpc::message;
use corvid_core::transport::Inbound;
use corvid_core::transport::lines::LineReader;
use libfuzzer_sys::fuzz_target;

/// `lines::PREFIX_KEEP`.
const PREFIX_KEEP: usize = 512;

#[derive(Debug, PartialEq)]
enum Expected<'a> {
    Frame(&'a [u8]),
    TooLong(&'a [u8]),
}

fn reference(input: &[u8], max: usize) -> Vec<Expected<'_>> {
    let mut out = Vec::new();
    let mut lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if input.ends_with(b"\n") || input.is_empty() {
        lines.pop();
    }
    for line in lines {
        if line.len() > max {
            out.push(Expected::TooLong(line));
        } else if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        } else {
            out.push(Expected::Frame(line.strip_suffix(b"\r").unwrap_or(line)));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let [cap, max_lo, max_hi, input @ ..] = data else { return };
    let cap = 1 + usize::from(*cap);
    let max = usize::from(u16::from_le_bytes([*max_lo, *max_hi]) % 2048);
    let mut reader = LineReader::new(BufReader::with_capacity(cap, input), max);
    let expected = reference(input, max);
    let mut got = 0;
    while let Some(inbound) = reader.next_frame().expect("reading from memory cannot fail") {
        let want = expected.get(got).unwrap_or_else(|| panic!("extra frame {inbound:?}"));
        match (&inbound, want) {
            (Inbound::Frame(bytes), Expected::Frame(line)) => {
                assert_eq!(bytes.as_slice(), *line);
                let _ = message::parse(bytes);
            }
            (Inbound::TooLong { len, prefix }, Expected::TooLong(line)) => {
                assert_eq!(*len, line.len());
                assert!(line.starts_with(prefix), "the prefix comes from the line");
                assert!(prefix.len() <= PREFIX_KEEP);
                assert!(prefix.len() >= PREFIX_KEEP.min(max + 1), "prefix of {} bytes", prefix.len());
                let _ = message::sniff_id(prefix);
            }
            (got, want) => panic!("got {got:?}, expected {want:?}"),
        }
        got += 1;
    }
    assert_eq!(got, expected.len(), "frames missing");
});
