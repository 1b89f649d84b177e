//! Which parts of a serialized update repeat earlier parts of it: where a spliced text begins or
//! ends like the text spliced before it, as a diff's new text does its old one. The store
//! leaves them out (`store::packed`). No cut splits a character or an escape sequence, so what
//! is stored is still JSON (SQLite's `json_extract` and PostgreSQL's `::jsonb` read the column).

use std::ops::Range;

use super::json_text::Spliced;
use crate::store::packed::Repeat;

/// Shorter common runs are not worth a repeat.
const REPEAT_FROM: usize = 1024;

/// The repeats of `spliced`, in order.
pub fn find(spliced: &Spliced) -> Vec<Repeat> {
    let (json, mut repeats) = (&spliced.json, Vec::new());
    for pair in spliced.texts.windows(2) {
        let (a, b): (&Range<usize>, &Range<usize>) = (&pair[0], &pair[1]);
        let (Some(earlier), Some(later)) = (json.as_bytes().get(a.clone()), json.as_bytes().get(b.clone())) else {
            continue;
        };
        let mut head = common_prefix(earlier, later);
        while head > 0 && !cuttable(json, b.start + head) {
            head -= 1;
        }
        // The tail may not reach back into the head.
        let mut tail = common_suffix(earlier, later).min(earlier.len().min(later.len()) - head);
        while tail > 0 && !cuttable(json, b.end - tail) {
            tail -= 1;
        }
        if head >= REPEAT_FROM {
            repeats.push(Repeat { at: b.start, from: a.start, len: head });
        }
        if tail >= REPEAT_FROM {
            repeats.push(Repeat { at: b.end - tail, from: a.end - tail, len: tail });
        }
    }
    repeats
}

/// Whether cutting `json` at byte `k` keeps characters and escape sequences whole.
fn cuttable(json: &str, k: usize) -> bool {
    json.is_char_boundary(k) && !splits_escape(json.as_bytes(), k)
}

/// Whether `k` falls inside an escape sequence (`\n`, `\"`, `\u001f`...) of JSON text `s`.
fn splits_escape(s: &[u8], k: usize) -> bool {
    // An escape covering `k` began at most five bytes before it (`\u00XX` is six long); the
    // nearest backslash that begins one decides.
    for start in (k.saturating_sub(5)..k).rev() {
        if s[start] == b'\\' && begins_escape(s, start) {
            let len = if s.get(start + 1) == Some(&b'u') { 6 } else { 2 };
            return start + len > k;
        }
    }
    false
}

/// A backslash begins an escape unless it is itself escaped: an even run of backslashes
/// comes before it.
fn begins_escape(s: &[u8], at: usize) -> bool {
    s[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::json_text::Texts;
    use crate::store::packed::{pack, unpack};

    fn spliced(old: &str, new: &str) -> Spliced {
        let mut texts = Texts::spliced();
        let value = serde_json::json!({ "oldText": texts.place(old), "newText": texts.place(new) });
        texts.splice(serde_json::to_string(&value).expect("serializes"))
    }

    /// An edit in the middle of a large text, with escapes and multibyte characters on either
    /// side of every possible cut: packed, what is stored is JSON holding the old text whole
    /// and about the edit of the new; unpacked, the update is back byte for byte.
    #[test]
    fn a_diff_keeps_its_new_text_as_the_change_and_unpacks_whole() {
        let line = "let s = \"é\\n\";\t// 日本 \u{1}\u{1f}\n";
        for pad in 0..8 {
            let old = format!("{}{}MIDDLE{}", "x".repeat(pad), line.repeat(200), line.repeat(200));
            for edit in ["", "MIDDLE!", "\"", "\n", "\u{2}", "é", "\\"] {
                let new = old.replacen("MIDDLE", edit, 1);
                let whole = spliced(&old, &new);
                let repeats = find(&whole);
                assert_eq!(repeats.len(), 2, "a head and a tail");
                let (stored, spelled) = pack(&whole.json, &repeats).expect("packs");
                let v: serde_json::Value = serde_json::from_str(&stored).expect("what is stored is JSON");
                assert_eq!(v["oldText"].as_str(), Some(&*old));
                assert!(v["newText"].as_str().is_some_and(|t| t.len() < 16), "{}", v["newText"]);
                assert_eq!(unpack(stored, Some(&spelled)).expect("unpacks"), whole.json);
            }
        }
    }

    #[test]
    fn unrelated_or_small_texts_have_no_repeats() {
        assert!(find(&spliced(&"a".repeat(5000), &"b".repeat(5000))).is_empty());
        // Alike for fewer bytes than a repeat is worth.
        let (old, new) =
            (format!("{}{}", "s".repeat(500), "a".repeat(5000)), format!("{}{}", "s".repeat(500), "b".repeat(5000)));
        assert!(find(&spliced(&old, &new)).is_empty());
        assert!(find(&spliced("tiny", "tiny")).is_empty(), "texts too small to splice");
        // The same text twice (a write that changed nothing): one repeat, all of it.
        let same = "same\n".repeat(1000);
        let whole = spliced(&same, &same);
        let r = whole.texts[1].clone();
        assert_eq!(find(&whole), [Repeat { at: r.start, from: whole.texts[0].start, len: r.len() }]);
    }

    #[test]
    fn cuts_keep_escapes_whole() {
        let s = br#"a\nb\\c\u001fd\\\"e"#;
        let splits: Vec<usize> = (0..=s.len()).filter(|&k| splits_escape(s, k)).collect();
        // Inside `\n` (1..3), each `\\` (4..6, 14..16), `\u001f` (7..13) and `\"` (16..18).
        assert_eq!(splits, [2, 5, 8, 9, 10, 11, 12, 15, 17]);
    }
}
