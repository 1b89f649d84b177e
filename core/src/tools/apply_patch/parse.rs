//! The patch language of `apply_patch` (Codex's), parsed into file operations. Pure: nothing
//! here touches a file. Errors name the patch line they are about, so the model can fix it.
//!
//! ```text
//! Patch      := "*** Begin Patch" { FileOp } "*** End Patch"
//! FileOp     := AddFile | DeleteFile | UpdateFile
//! AddFile    := "*** Add File: " path { "+" line }
//! DeleteFile := "*** Delete File: " path
//! UpdateFile := "*** Update File: " path [ "*** Move to: " path ] { Hunk }
//! Hunk       := { "@@" [ context line ] } { (" " | "-" | "+") line } [ "*** End of File" ]
//! ```
//!
//! Like Codex's parser this one is lenient where models slip: markers padded with spaces, a
//! heredoc wrapper (`<<'EOF'` … `EOF`) left around the patch, an empty line inside a hunk
//! taken as an empty context line, the first hunk of a file without its `@@`. Beyond it, several
//! `@@` lines in a row each narrow the place down, as the format's own description promises.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// Why a patch could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the patch is empty")]
    Empty,
    #[error("line 1: the patch must start with '*** Begin Patch', found '{0}'")]
    NoBegin(String),
    #[error("line {0}: the patch must end with '*** End Patch'")]
    NoEnd(usize),
    #[error("line {line}: {message}")]
    At { line: usize, message: String },
}

fn at(line: usize, message: impl Into<String>) -> ParseError {
    ParseError::At { line, message: message.into() }
}

/// One file operation of a patch, with the patch line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOp {
    pub line: usize,
    pub kind: OpKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    Add { path: String, content: String },
    Delete { path: String },
    Update { path: String, move_to: Option<String>, hunks: Vec<Hunk> },
}

impl FileOp {
    /// Every path the operation touches (an update's destination too).
    pub fn paths(&self) -> Vec<&str> {
        match &self.kind {
            OpKind::Add { path, .. } | OpKind::Delete { path } => vec![path],
            OpKind::Update { path, move_to, .. } => std::iter::once(path.as_str()).chain(move_to.as_deref()).collect(),
        }
    }
}

/// One `@@` hunk: where to look (`contexts`, each found after the one before), the lines it
/// replaces and what replaces them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// The patch line the hunk starts on.
    pub line: usize,
    pub contexts: Vec<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File`: the old lines end the file.
    pub at_end: bool,
}

/// Parses a whole patch.
pub fn parse(patch: &str) -> Result<Vec<FileOp>, ParseError> {
    let all: Vec<&str> = patch.trim().lines().collect();
    let lines = unwrap_heredoc(&all);
    // Line numbers count from the patch's first line (after a heredoc opener, if any).
    let first = if lines.len() < all.len() { 2 } else { 1 };
    let Some(head) = lines.first() else { return Err(ParseError::Empty) };
    if head.trim() != BEGIN {
        return Err(ParseError::NoBegin(head.trim().chars().take(80).collect()));
    }
    if lines.len() < 2 || lines[lines.len() - 1].trim() != END {
        return Err(ParseError::NoEnd(first + lines.len() - 1));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line_no = first + 1 + i;
        let header = body[i].trim();
        i += 1;
        if header.is_empty() {
            continue;
        }
        if let Some(path) = header.strip_prefix(ADD.trim_end()).map(str::trim) {
            let path = file_path(path, line_no)?;
            let mut content = String::new();
            while let Some(l) = body.get(i).filter(|l| !is_marker(l)) {
                // Blank lines after the content, before the next operation, only separate.
                let rest_blank = || body[i..].iter().find(|l| !l.trim().is_empty()).is_none_or(|l| is_marker(l));
                match l.strip_prefix('+') {
                    None if l.trim().is_empty() && rest_blank() => break,
                    Some(text) => {
                        content.push_str(text);
                        content.push('\n');
                    }
                    None => {
                        return Err(at(
                            first + 1 + i,
                            format!("every line of an added file starts with '+', found '{}'", shorten(l)),
                        ));
                    }
                }
                i += 1;
            }
            ops.push(FileOp { line: line_no, kind: OpKind::Add { path, content } });
        } else if let Some(path) = header.strip_prefix(DELETE.trim_end()).map(str::trim) {
            ops.push(FileOp { line: line_no, kind: OpKind::Delete { path: file_path(path, line_no)? } });
        } else if let Some(path) = header.strip_prefix(UPDATE.trim_end()).map(str::trim) {
            let path = file_path(path, line_no)?;
            let move_to = match body.get(i).and_then(|l| l.trim().strip_prefix(MOVE.trim_end())) {
                Some(to) => {
                    i += 1;
                    Some(file_path(to.trim(), line_no + 1)?)
                }
                None => None,
            };
            let (hunks, used) = parse_hunks(&body[i..], first + 1 + i)?;
            if hunks.is_empty() {
                return Err(at(
                    line_no,
                    format!("'*** Update File: {path}' has no hunks (no '@@' and no changed lines)"),
                ));
            }
            i += used;
            ops.push(FileOp { line: line_no, kind: OpKind::Update { path, move_to, hunks } });
        } else {
            return Err(at(
                line_no,
                format!(
                    "expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>', found '{}'",
                    shorten(header)
                ),
            ));
        }
    }
    if ops.is_empty() {
        return Err(at(first, "the patch changes no files"));
    }
    Ok(ops)
}

/// The hunks of one updated file, from the lines after its header up to the next file
/// operation; and how many lines they took.
fn parse_hunks(lines: &[&str], first: usize) -> Result<(Vec<Hunk>, usize), ParseError> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut current: Option<Hunk> = None;
    let mut i = 0;
    while let Some(&l) = lines.get(i) {
        let line_no = first + i;
        if l.trim() == END_OF_FILE {
            match current.as_mut() {
                Some(h) if !h.old.is_empty() || !h.new.is_empty() => h.at_end = true,
                _ => return Err(at(line_no, "'*** End of File' must follow the lines of a hunk")),
            }
            hunks.extend(current.take());
            i += 1;
            continue;
        }
        if is_marker(l) {
            break;
        }
        if let Some(context) = l.trim_end().strip_prefix("@@") {
            // A new `@@` after changed lines starts the next hunk; right after another `@@` it
            // narrows the same one down.
            let starts_new = current.as_ref().is_none_or(|h| !h.old.is_empty() || !h.new.is_empty());
            if starts_new {
                hunks.extend(current.take());
                current = Some(Hunk { line: line_no, ..Hunk::default() });
            }
            let context = context.strip_prefix(' ').unwrap_or(context);
            if !context.trim().is_empty()
                && let Some(h) = current.as_mut()
            {
                h.contexts.push(context.to_string());
            }
            i += 1;
            continue;
        }
        let hunk = current.get_or_insert_with(|| Hunk { line: line_no, ..Hunk::default() });
        match l.chars().next() {
            // An empty line inside a hunk: an empty context line whose space was lost.
            None => {
                hunk.old.push(String::new());
                hunk.new.push(String::new());
            }
            Some(' ') => {
                hunk.old.push(l[1..].to_string());
                hunk.new.push(l[1..].to_string());
            }
            Some('-') => hunk.old.push(l[1..].to_string()),
            Some('+') => hunk.new.push(l[1..].to_string()),
            Some(_) => {
                return Err(at(
                    line_no,
                    format!(
                        "unexpected line in a hunk: '{}'; every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added)",
                        shorten(l)
                    ),
                ));
            }
        }
        i += 1;
    }
    if let Some(h) = current {
        if h.old.is_empty() && h.new.is_empty() {
            return Err(at(h.line, "the hunk has no lines after its '@@'"));
        }
        hunks.push(h);
    }
    // Blank lines between the last hunk and the next operation were taken as context: give
    // them back (a trailing empty context line means nothing).
    for h in &mut hunks {
        while h.old.last().is_some_and(String::is_empty) && h.new.last().is_some_and(String::is_empty) {
            h.old.pop();
            h.new.pop();
        }
    }
    Ok((hunks, i))
}

/// A line that starts a file operation or ends the patch (not a hunk's `*** End of File`).
fn is_marker(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("*** ") && t != END_OF_FILE && !t.starts_with(MOVE.trim_end())
}

fn file_path(path: &str, line: usize) -> Result<String, ParseError> {
    if path.is_empty() { Err(at(line, "the file operation names no path")) } else { Ok(path.to_string()) }
}

/// The patch inside a heredoc wrapper a model left around it (`<<'EOF'` … `EOF`).
fn unwrap_heredoc<'a>(lines: &'a [&'a str]) -> &'a [&'a str] {
    match lines {
        [first, inner @ .., last]
            if ["<<EOF", "<<'EOF'", "<<\"EOF\""].contains(&first.trim()) && last.trim().ends_with("EOF") =>
        {
            inner
        }
        _ => lines,
    }
}

fn shorten(line: &str) -> String {
    let mut s: String = line.chars().take(80).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_of_every_kind_parses() {
        let patch = "*** Begin Patch\n\
                     *** Add File: docs/new.md\n\
                     +# New\n\
                     +\n\
                     *** Delete File: old.txt\n\
                     *** Update File: src/a.py\n\
                     *** Move to: src/b.py\n\
                     @@ class A\n\
                     @@     def f(self):\n\
                     \x20        x = 1\n\
                     -        return x\n\
                     +        return x + 1\n\
                     @@\n\
                     -tail\n\
                     +end\n\
                     *** End of File\n\
                     *** End Patch\n";
        let ops = parse(patch).unwrap_or_default();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            FileOp { line: 2, kind: OpKind::Add { path: "docs/new.md".into(), content: "# New\n\n".into() } }
        );
        assert_eq!(ops[1], FileOp { line: 5, kind: OpKind::Delete { path: "old.txt".into() } });
        let OpKind::Update { path, move_to, hunks } = &ops[2].kind else { panic!("not an update: {:?}", ops[2]) };
        assert_eq!((path.as_str(), move_to.as_deref(), ops[2].line), ("src/a.py", Some("src/b.py"), 6));
        assert_eq!(
            hunks,
            &vec![
                Hunk {
                    line: 8,
                    contexts: vec!["class A".into(), "    def f(self):".into()],
                    old: vec!["        x = 1".into(), "        return x".into()],
                    new: vec!["        x = 1".into(), "        return x + 1".into()],
                    at_end: false,
                },
                Hunk { line: 13, contexts: vec![], old: vec!["tail".into()], new: vec!["end".into()], at_end: true },
            ]
        );
    }

    #[test]
    fn lenient_where_models_slip() {
        // A heredoc wrapper, padded markers, a first hunk without its `@@`.
        let patch = "<<'EOF'\n  *** Begin Patch \n*** Update File: a.txt  \n keep\n-old\n+new\n *** End Patch\nEOF";
        let ops = parse(patch).unwrap_or_default();
        let hunks = match ops.first().map(|o| &o.kind) {
            Some(OpKind::Update { hunks, .. }) => hunks.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(hunks[0].old, vec!["keep".to_string(), "old".into()]);
        assert_eq!(hunks[0].new, vec!["keep".to_string(), "new".into()]);
    }

    #[test]
    fn malformed_patches_say_where() {
        let err = |p: &str| parse(p).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err(""), "the patch is empty");
        assert_eq!(err("hello\n*** End Patch"), "line 1: the patch must start with '*** Begin Patch', found 'hello'");
        assert_eq!(err("*** Begin Patch\n*** Add File: a\n+x"), "line 3: the patch must end with '*** End Patch'");
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\n*** Frobnicate: b\n*** End Patch"),
            "line 4: expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>', found '*** Frobnicate: b'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch"),
            "line 4: every line of an added file starts with '+', found 'y'"
        );
        assert!(
            err("*** Begin Patch\n*** Update File: a\n@@\n-x\n?y\n*** End Patch")
                .starts_with("line 5: unexpected line in a hunk: '?y'")
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a.txt\n*** End Patch"),
            "line 2: '*** Update File: a.txt' has no hunks (no '@@' and no changed lines)"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n@@ f\n*** End Patch"),
            "line 3: the hunk has no lines after its '@@'"
        );
        assert_eq!(err("*** Begin Patch\n*** Add File:\n*** End Patch"), "line 2: the file operation names no path");
        assert_eq!(err("*** Begin Patch\n*** End Patch"), "line 1: the patch changes no files");
        // Inside a heredoc the lines still count from the heredoc's first.
        assert_eq!(
            err("<<EOF\n*** Begin Patch\n*** Delete File: a\nzzz\n*** End Patch\nEOF"),
            "line 4: expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>', found 'zzz'"
        );
    }
}
