//! Large texts in JSON without serde's byte-at-a-time escaping.
//!
//! A diff update carries a file's whole old and new text: megabytes for a large file, which
//! serde_json escapes one byte at a time (a quarter of the agent's time on a 2 MB edit, by
//! perf). Here the texts enter the schema's types as short stand-ins; once the small update is
//! serialized, each stand-in is replaced by its text, escaped eight bytes at a time. A text
//! that begins or ends like the one spliced before it (a diff's new text and its old one) is
//! escaped only where it differs: the rest is copied from the earlier text's escaped bytes,
//! since escaping goes byte by byte and a piece escapes the same wherever it stands. The result
//! is byte for byte what serde_json writes for the whole update (tested below).

use std::ops::Range;

use crate::store::packed::Repeat;

/// Texts shorter than this are copied into the update as usual: the stand-in would save
/// nothing.
const SPLICE_FROM: usize = 4096;

/// How an update's large texts get into it: copied, or as stand-ins spliced afterwards.
pub struct Texts<'e> {
    /// `false`: copy every text (the update is serialized by someone else, e.g. a request).
    splices: bool,
    /// Made with the first stand-in (most updates carry no large text, and cost no random).
    nonce: Option<String>,
    spliced: Vec<&'e str>,
}

impl<'e> Texts<'e> {
    /// Every text copied into the update.
    pub fn copied() -> Self {
        Self { splices: false, nonce: None, spliced: Vec::new() }
    }

    /// Large texts as stand-ins, for [`Texts::splice`] to put back.
    pub fn spliced() -> Self {
        Self { splices: true, nonce: None, spliced: Vec::new() }
    }

    /// What goes into the update for `text`.
    pub fn place(&mut self, text: &'e str) -> String {
        if !self.splices || text.len() < SPLICE_FROM {
            return text.to_string();
        }
        let nonce = self.nonce.get_or_insert_with(|| uuid::Uuid::new_v4().simple().to_string());
        let stand_in = stand_in(self.spliced.len(), nonce);
        self.spliced.push(text);
        stand_in
    }

    /// `json` (an update serialized with the stand-ins) with each stand-in replaced by its
    /// text, written as serde_json would have written it.
    pub fn splice(&self, json: String) -> Spliced {
        let Some(nonce) = &self.nonce else { return Spliced { json, texts: Vec::new(), copies: Vec::new() } };
        // Where each stand-in is, as serde_json wrote it (quoted, its control bytes escaped).
        let mut at: Vec<(usize, usize, &str)> = Vec::with_capacity(self.spliced.len());
        for (i, text) in self.spliced.iter().enumerate() {
            let mut quoted = String::new();
            write_str(&mut quoted, &stand_in(i, nonce));
            if let Some(start) = json.find(&*quoted) {
                at.push((start, start + quoted.len(), text));
            }
        }
        at.sort_unstable_by_key(|(start, ..)| *start);
        let total: usize = at.iter().map(|(_, _, t)| t.len()).sum();
        // Escapes lengthen a text a little (a newline takes two bytes): one growth covers it.
        let mut out = String::with_capacity(json.len() + total + total / 16 + 64);
        let mut from = 0;
        let mut texts: Vec<Range<usize>> = Vec::with_capacity(at.len());
        let mut copies = Vec::new();
        // The text before, if it was escaped in full (not partly copied): where its escaped
        // head and tail (alike with this text's, `shared`) went.
        let mut before: Option<Escaped> = None;
        for (k, &(start, end, text)) in at.iter().enumerate() {
            out.push_str(&json[from..start]);
            out.push('"');
            let begin = out.len();
            match before.take().filter(|b| b.head_raw + b.tail_raw > 0) {
                Some(b) => {
                    let (head, tail) = (b.head.end - b.head.start, b.tail.end - b.tail.start);
                    copies.push(Repeat { at: out.len(), from: b.head.start, len: head });
                    out.extend_from_within(b.head);
                    escape_into(&mut out, &text[b.head_raw..text.len() - b.tail_raw]);
                    copies.push(Repeat { at: out.len(), from: b.tail.start, len: tail });
                    out.extend_from_within(b.tail);
                }
                None => {
                    let next = at.get(k + 1).map_or("", |&(_, _, t)| t);
                    let (head_raw, tail_raw) = shared(text, next);
                    escape_into(&mut out, &text[..head_raw]);
                    let head = begin..out.len();
                    escape_into(&mut out, &text[head_raw..text.len() - tail_raw]);
                    let tail_start = out.len();
                    escape_into(&mut out, &text[text.len() - tail_raw..]);
                    before = Some(Escaped { head, tail: tail_start..out.len(), head_raw, tail_raw });
                }
            }
            texts.push(begin..out.len());
            out.push('"');
            from = end;
        }
        out.push_str(&json[from..]);
        copies.retain(|c| c.len > 0);
        Spliced { json: out, texts, copies }
    }
}

/// A text escaped whole into the update, and the escaped bytes of its head and tail, which the
/// next text (sharing `head_raw` leading and `tail_raw` trailing bytes with it) copies.
struct Escaped {
    head: Range<usize>,
    tail: Range<usize>,
    head_raw: usize,
    tail_raw: usize,
}

/// How many bytes `a` and `b` begin and end with alike, not overlapping in either, each cut
/// on a character boundary of both (the same bytes before a cut, so the same boundary).
fn shared(a: &str, b: &str) -> (usize, usize) {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let mut head = common_prefix(x, y);
    while !(a.is_char_boundary(head) && b.is_char_boundary(head)) {
        head -= 1;
    }
    let mut tail = common_suffix(x, y).min(x.len().min(y.len()) - head);
    while !(a.is_char_boundary(a.len() - tail) && b.is_char_boundary(b.len() - tail)) {
        tail -= 1;
    }
    (head, tail)
}

/// How many bytes `a` and `b` start with alike (compared a block at a time: `memcmp`).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    for step in [4096, 64, 1] {
        while i + step <= n && a[i..i + step] == b[i..i + step] {
            i += step;
        }
    }
    i
}

/// How many bytes `a` and `b` end with alike.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    for step in [4096, 64, 1] {
        while i + step <= n && a[a.len() - i - step..a.len() - i] == b[b.len() - i - step..b.len() - i] {
            i += step;
        }
    }
    i
}

/// A serialized update, where the contents of its spliced texts lie in it (between their
/// quotes, escaped), in order, and which of its ranges were copied from earlier ones (a text's
/// head or tail from the text before it), in order.
pub struct Spliced {
    pub json: String,
    pub texts: Vec<Range<usize>>,
    pub copies: Vec<Repeat>,
}

/// A string that no text of an update holds by chance: a random nonce between control bytes.
fn stand_in(i: usize, nonce: &str) -> String {
    format!("\u{1}corvid-text-{i}-{nonce}\u{1}")
}

/// Writes `s` as a JSON string, quotes included, exactly as serde_json does: `"` and `\`
/// backslashed, the short escapes for \b \f \n \r \t, `\u00XX` for the other control bytes,
/// everything else as it is.
pub fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    escape_into(out, s);
    out.push('"');
}

/// `s` escaped as the inside of a JSON string. Every byte that needs an escape is ASCII, so
/// the pieces between them are whole characters: written as `str`s, nothing is validated again.
fn escape_into(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut run = 0; // start of the bytes not yet written
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time up to the first that needs an escape.
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word =
                u64::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
            let found = needs_escape(word);
            if found == 0 {
                i += 8;
                continue;
            }
            // The lowest flagged byte is exact (only bytes above a real one can be flagged
            // wrongly, by a borrow): step straight to it.
            i += (found.trailing_zeros() / 8) as usize;
        }
        let Some(&b) = bytes.get(i) else { break };
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => {
                out.push_str(&s[run..i]);
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
                i += 1;
                run = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[run..i]);
        out.push_str(escape);
        i += 1;
        run = i;
    }
    out.push_str(&s[run..]);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The high bit of each byte of `word` (little-endian) that is a control byte, `"` or `\`,
/// by the `hasless` and `haszero` word tricks (Bit Twiddling Hacks): zero exactly when there is
/// none, and the lowest bit set is the first such byte.
fn needs_escape(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    // A byte below 0x20: subtracting 0x20 borrows into its high bit, which it did not have.
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control | zero(word ^ (ONES * u64::from(b'"'))) | zero(word ^ (ONES * u64::from(b'\\')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(s: &str) -> String {
        let mut out = String::new();
        write_str(&mut out, s);
        out
    }

    #[test]
    fn every_string_is_written_as_serde_json_writes_it() {
        let mut cases: Vec<String> =
            (0u32..=0x7f).filter_map(char::from_u32).map(|c| format!("abcdefgh{c}ijklmnop")).collect();
        cases.extend(
            ["", "\"", "\\", "é", "日本語\n", "\u{7f}\u{80}\u{ffff}\u{10ffff}", "a\u{0}b\u{1f}c"].map(String::from),
        );
        // Escapes at every position of a word, and runs longer than a word.
        for at in 0..17 {
            let mut s = "x".repeat(17);
            s.insert(at, '\n');
            cases.push(s.clone());
            cases.push(s.replace('\n', "\"é\u{3}"));
        }
        cases.push("fn main() {\n    println!(\"hi\\n\");\n}\n".repeat(500));
        for s in cases {
            assert_eq!(ours(&s), serde_json::to_string(&s).expect("serializes"), "{s:?}");
        }
    }

    #[test]
    fn spliced_texts_read_as_if_they_had_been_serialized_in_place() {
        let big = "line \"one\"\n\ttwo\u{2}\n".repeat(400);
        let other = "ü".repeat(3000);
        let mut texts = Texts::spliced();
        let value =
            serde_json::json!({ "old": texts.place(&big), "small": texts.place("tiny"), "new": texts.place(&other) });
        let spliced = texts.splice(serde_json::to_string(&value).expect("serializes"));
        let expected = serde_json::to_string(&serde_json::json!({ "old": big, "small": "tiny", "new": other }))
            .expect("serializes");
        assert_eq!(spliced.json, expected);
        let contents: Vec<&str> = spliced.texts.iter().map(|r| &spliced.json[r.clone()]).collect();
        let escaped = |s: &str| serde_json::to_string(s).expect("serializes").trim_matches('"').to_string();
        assert_eq!(contents, [escaped(&big), escaped(&other)], "the texts' ranges, in order");

        let mut copied = Texts::copied();
        assert_eq!(copied.place(&big), big, "copied texts are the texts");
    }

    /// A new text that differs from the old one in the middle, with escapes and multibyte
    /// characters on either side of every possible cut, and cuts that would split a character:
    /// written partly by copying the old text's escaped bytes, it reads exactly as serde_json
    /// writes it, and the copies say which bytes came from where.
    #[test]
    fn a_text_like_the_one_before_it_is_copied_where_it_is_alike() {
        let line = "let s = \"é\\n\";\t// 日本 \u{1}\u{1f}\n";
        for pad in 0..8 {
            let old = format!("{}{}MIDDLE{}", "x".repeat(pad), line.repeat(80), line.repeat(80));
            let mut pairs: Vec<(String, String)> = ["", "MIDDLE!", "\"", "\n", "\u{2}", "é", "\\", "日"]
                .iter()
                .map(|edit| (old.clone(), old.replacen("MIDDLE", edit, 1)))
                .collect();
            // Changes inside a character: "é" (c3 a9) to "è" (c3 a8) and to "ũ" (c5 a9), so the
            // alike bytes end or begin in the middle of one.
            pairs.extend(["è", "ũ"].map(|c| (old.replacen("MIDDLE", "é", 1), old.replacen("MIDDLE", c, 1))));
            for (i, (old, new)) in pairs.into_iter().enumerate() {
                let mut texts = Texts::spliced();
                let value =
                    serde_json::json!({ "path": "/a", "oldText": texts.place(&old), "newText": texts.place(&new) });
                let spliced = texts.splice(serde_json::to_string(&value).expect("serializes"));
                let expected = serde_json::json!({ "path": "/a", "oldText": old, "newText": new });
                assert_eq!(spliced.json, serde_json::to_string(&expected).expect("serializes"), "pad {pad}, pair {i}");
                assert_eq!(spliced.copies.len(), 2, "a head and a tail: pad {pad}, pair {i}");
                for c in &spliced.copies {
                    assert_eq!(spliced.json[c.at..c.at + c.len], spliced.json[c.from..c.from + c.len]);
                    assert!(c.from + c.len <= spliced.texts[0].end && c.at >= spliced.texts[1].start);
                }
                let copied: usize = spliced.copies.iter().map(|c| c.len).sum();
                assert!(spliced.texts[1].len() - copied < 24, "only the change is escaped anew: pad {pad}, pair {i}");
            }
        }
        // Texts with nothing alike copy nothing.
        let (a, b) = ("a".repeat(5000), "b".repeat(5000));
        let mut texts = Texts::spliced();
        let value = serde_json::json!([texts.place(&a), texts.place(&b)]);
        assert!(texts.splice(serde_json::to_string(&value).expect("serializes")).copies.is_empty());
    }
}
