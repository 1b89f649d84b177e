//! A payload's stored form: the text with the ranges that repeat earlier bytes of itself taken
//! out, and where to copy them back from (the `repeats` column of `events`).
//!
//! A diff update carries a file's whole old and new text, which are nearly the same bytes
//! twice: four megabytes for an edit of a two-megabyte file, and writing them (the commit, then
//! the checkpoint copying them again) was most of what storing an edit cost. Packed, the new
//! text keeps only what differs from the old. Unpacking copies bytes back in place, so a replay
//! is byte for byte what was sent. Which ranges repeat is the renderer's business
//! (`event::json_text`); here it is only bytes.

use std::fmt::Write;

use super::StoreError;

/// `len` bytes of a whole payload at `at` that are the same as those at `from`, earlier
/// (`from + len <= at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    pub at: usize,
    pub from: usize,
    pub len: usize,
}

/// `whole` as stored: without the repeated ranges (in order, not overlapping), and the ranges
/// as the `repeats` column spells them. `None` when there is nothing to take out or a range
/// would cut a character in two (then the whole text is stored).
pub fn pack(whole: &str, repeats: &[Repeat]) -> Option<(String, String)> {
    let kept_out: usize = repeats.iter().map(|r| r.len).sum();
    if kept_out == 0 {
        return None;
    }
    let mut text = String::with_capacity(whole.len() - kept_out.min(whole.len()));
    let mut spelled = String::new();
    let mut from = 0;
    for r in repeats {
        if r.at < from || r.from + r.len > r.at {
            return None;
        }
        text.push_str(whole.get(from..r.at)?);
        // The range left out must end on a character boundary too.
        whole.get(r.at..r.at + r.len)?;
        from = r.at + r.len;
        let comma = if spelled.is_empty() { "" } else { "," };
        let _ = write!(spelled, "{comma}{}:{}:{}", r.at, r.from, r.len);
    }
    text.push_str(whole.get(from..)?);
    Some((text, spelled))
}

/// The whole payload of a stored one: `text` with the ranges `repeats` names copied back.
pub fn unpack(text: String, repeats: Option<&str>) -> Result<String, StoreError> {
    let Some(repeats) = repeats else { return Ok(text) };
    let damaged = |what: &str| StoreError::Corrupt(format!("a packed payload's repeats ({repeats:.80}): {what}"));
    let repeats: Vec<Repeat> =
        repeats.split(',').map(parse).collect::<Option<_>>().ok_or_else(|| damaged("unreadable"))?;
    let mut whole = Vec::with_capacity(text.len() + repeats.iter().map(|r| r.len).sum::<usize>());
    let mut next = 0;
    for r in &repeats {
        let kept = r.at.checked_sub(whole.len()).ok_or_else(|| damaged("out of order"))?;
        let piece = text.as_bytes().get(next..next + kept).ok_or_else(|| damaged("past the text's end"))?;
        whole.extend_from_slice(piece);
        next += kept;
        if r.from.checked_add(r.len).is_none_or(|end| end > whole.len()) {
            return Err(damaged("copies from where nothing is yet"));
        }
        whole.extend_from_within(r.from..r.from + r.len);
    }
    whole.extend_from_slice(text.as_bytes().get(next..).ok_or_else(|| damaged("past the text's end"))?);
    String::from_utf8(whole).map_err(|_| damaged("not UTF-8 once unpacked"))
}

fn parse(spelled: &str) -> Option<Repeat> {
    let mut parts = spelled.split(':').map(|p| p.parse::<usize>().ok());
    let repeat = Repeat { at: parts.next()??, from: parts.next()??, len: parts.next()?? };
    parts.next().is_none().then_some(repeat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_takes_the_repeats_out_and_unpacking_puts_them_back() {
        let whole = "[\"abcdefé-one-xyz\",\"abcdefé-two-xyz\"]";
        let second = whole.rfind("abcdef").expect("second text");
        let prefix = "abcdefé-".len();
        let repeats = [
            Repeat { at: second, from: 2, len: prefix },
            Repeat { at: second + prefix + 3, from: 2 + prefix + 3, len: 4 },
        ];
        let (text, spelled) = pack(whole, &repeats).expect("packed");
        assert_eq!(text, "[\"abcdefé-one-xyz\",\"two\"]");
        assert_eq!(spelled, format!("{second}:2:{prefix},{}:{}:4", second + prefix + 3, 2 + prefix + 3));
        assert_eq!(unpack(text, Some(&spelled)).expect("unpacked"), whole);
        assert_eq!(unpack("plain".into(), None).expect("as is"), "plain");
    }

    #[test]
    fn what_cannot_be_packed_is_stored_whole() {
        let whole = "aaé-aaé";
        // A range that would cut `é` in two, one that copies from after itself, none at all.
        assert_eq!(pack(whole, &[Repeat { at: 5, from: 0, len: 3 }]), None);
        assert_eq!(pack(whole, &[Repeat { at: 2, from: 3, len: 2 }]), None);
        assert_eq!(pack(whole, &[]), None);
    }

    #[test]
    fn damaged_repeats_are_an_error_not_a_panic() {
        for repeats in
            ["", "x", "1:2", "1:2:3:4", "9:0:1", "0:0:2", "2:0:99", "3:0:1,1:0:1", "18446744073709551615:1:1"]
        {
            let got = unpack("abcdef".into(), Some(repeats));
            assert!(matches!(got, Err(StoreError::Corrupt(_))), "{repeats}: {got:?}");
        }
    }
}
