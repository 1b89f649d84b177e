//! Which parts of a serialized update repeat earlier parts of it: where a spliced text begins or
//! ends like the text spliced before it, as a diff's new text does its old one. The store
//! leaves them out (`store::packed`). They are the ranges `json_text` wrote by copying, so no
//! cut splits a character or an escape sequence, and what is stored is still JSON (SQLite's
//! `json_extract` and PostgreSQL's `::jsonb` read the column).

use super::json_text::Spliced;
use crate::store::packed::Repeat;

/// Shorter common runs are not worth a repeat.
const REPEAT_FROM: usize = 1024;

/// The repeats of `spliced`, in order.
pub fn find(spliced: &Spliced) -> Vec<Repeat> {
    spliced.copies.iter().filter(|c| c.len >= REPEAT_FROM).copied().collect()
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
            let edits = ["", "MIDDLE!", "\"", "\n", "\u{2}", "é", "\\"]
                .map(|edit| (old.clone(), old.replacen("MIDDLE", edit, 1)));
            // And changes inside a character ("é" is c3 a9, "è" c3 a8, "ũ" c5 a9).
            let within = ["è", "ũ"].map(|c| (old.replacen("MIDDLE", "é", 1), old.replacen("MIDDLE", c, 1)));
            for (old, new) in edits.into_iter().chain(within) {
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
}
