//! Large texts in JSON without serde's byte-at-a-time escaping.
//!
//! A diff update carries a file's whole old and new text: megabytes for a large file, which
//! serde_json escapes one byte at a time (a quarter of the agent's time on a 2 MB edit, by
//! perf). Here the texts enter the schema's types as short stand-ins; once the small update is
//! serialized, each stand-in is replaced by its text, escaped eight bytes at a time. The result
//! is byte for byte what serde_json writes for the whole update (tested below).

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
        let Some(nonce) = &self.nonce else { return Spliced { json, texts: Vec::new() } };
        // Where each stand-in is, as serde_json wrote it (quoted, its control bytes escaped).
        let mut at: Vec<(usize, usize, &str)> = Vec::with_capacity(self.spliced.len());
        for (i, text) in self.spliced.iter().enumerate() {
            let mut quoted = Vec::new();
            write_str(&mut quoted, &stand_in(i, nonce));
            let quoted = String::from_utf8_lossy(&quoted);
            if let Some(start) = json.find(&*quoted) {
                at.push((start, start + quoted.len(), text));
            }
        }
        at.sort_unstable_by_key(|(start, ..)| *start);
        let texts: usize = at.iter().map(|(_, _, t)| t.len()).sum();
        // Escapes lengthen a text a little (a newline takes two bytes): one growth covers it.
        let mut out = Vec::with_capacity(json.len() + texts + texts / 16 + 64);
        let mut from = 0;
        let mut texts = Vec::with_capacity(at.len());
        for (start, end, text) in at {
            out.extend_from_slice(&json.as_bytes()[from..start]);
            let quote = out.len();
            write_str(&mut out, text);
            texts.push(quote + 1..out.len() - 1);
            from = end;
        }
        out.extend_from_slice(&json.as_bytes()[from..]);
        // Valid UTF-8: whole JSON pieces between stand-ins, and texts escaped from `str`s.
        match String::from_utf8(out) {
            Ok(json) => Spliced { json, texts },
            Err(e) => Spliced { json: String::from_utf8_lossy(e.as_bytes()).into_owned(), texts: Vec::new() },
        }
    }
}

/// A serialized update, and where the contents of its spliced texts lie in it (between their
/// quotes, escaped), in order.
pub struct Spliced {
    pub json: String,
    pub texts: Vec<std::ops::Range<usize>>,
}

/// A string that no text of an update holds by chance: a random nonce between control bytes.
fn stand_in(i: usize, nonce: &str) -> String {
    format!("\u{1}corvid-text-{i}-{nonce}\u{1}")
}

/// Writes `s` as a JSON string, quotes included, exactly as serde_json does: `"` and `\`
/// backslashed, the short escapes for \b \f \n \r \t, `\u00XX` for the other control bytes,
/// everything else as it is.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
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
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]],
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escape);
        i += 1;
        run = i;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
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
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).expect("UTF-8")
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
}
