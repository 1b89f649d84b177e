//! apply_patch: several files changed in one call, in the patch language GPT models are
//! trained on (Codex's; see `parse`). All or nothing: every file is planned (read, hunks
//! matched, paths checked by the jail) before anything is written, and one permission question
//! shows every file's diff.

mod hunks;
mod parse;

use std::path::PathBuf;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, display, location, parse_args};
use crate::event::{ToolContent, ToolKind};
use crate::provider::ToolSpec;
use parse::{FileOp, OpKind};

pub const NAME: &str = "apply_patch";

#[derive(Deserialize)]
struct Args {
    /// Codex's function-style tool calls it `input`; `patch` is accepted too.
    #[serde(alias = "patch")]
    input: String,
}

fn parsed(args: &Value) -> Result<Vec<FileOp>, ToolError> {
    let a: Args = parse_args(NAME, args)?;
    parse::parse(&a.input).map_err(|e| ToolError::Failed(format!("invalid patch: {e}")))
}

/// One file as the patch leaves it: its text before (`None`: it did not exist) and after
/// (`None`: deleted).
struct Planned {
    /// The path as the patch names it (writes go through the jail by it again).
    path: String,
    resolved: PathBuf,
    before: Option<String>,
    after: Option<String>,
}

/// Every file a patch changes, worked out but not written, and a line per operation for the
/// model.
struct Plan {
    files: Vec<Planned>,
    summary: Vec<String>,
}

impl Plan {
    /// The file at `path` as the operations so far leave it, read on first use.
    async fn file(&mut self, path: &str, cx: &ToolContext<'_>) -> Result<usize, ToolError> {
        let resolved = cx.jail.resolve(path)?;
        if let Some(i) = self.files.iter().position(|f| f.resolved == resolved) {
            return Ok(i);
        }
        let (resolved, before) = cx.files().read(cx.jail, path).await?;
        let after = before.clone();
        self.files.push(Planned { path: path.to_string(), resolved, before, after });
        Ok(self.files.len() - 1)
    }

    /// The files whose text changes.
    fn changed(&self) -> impl Iterator<Item = &Planned> {
        self.files.iter().filter(|f| f.before != f.after)
    }

    fn diffs(&self) -> Vec<ToolContent> {
        self.changed()
            .map(|f| ToolContent::Diff {
                path: f.resolved.clone(),
                old: f.before.clone(),
                new: f.after.clone().unwrap_or_default(),
            })
            .collect()
    }
}

pub struct ApplyPatch;

impl ApplyPatch {
    async fn plan(args: &Value, cx: &ToolContext<'_>) -> Result<Plan, ToolError> {
        let ops = parsed(args)?;
        let mut plan = Plan { files: Vec::new(), summary: Vec::new() };
        for op in &ops {
            let failed =
                |what: String| ToolError::Failed(format!("patch line {}: {what}. Nothing was changed.", op.line));
            match &op.kind {
                OpKind::Add { path, content } => {
                    let i = plan.file(path, cx).await?;
                    plan.files[i].after = Some(content.clone());
                    plan.summary.push(format!("A {path}"));
                }
                OpKind::Delete { path } => {
                    let i = plan.file(path, cx).await?;
                    if plan.files[i].after.take().is_none() {
                        return Err(failed(format!("cannot delete {path}: it does not exist")));
                    }
                    plan.summary.push(format!("D {path}"));
                }
                OpKind::Update { path, move_to, hunks } => {
                    let i = plan.file(path, cx).await?;
                    let Some(text) = plan.files[i].after.as_deref() else {
                        return Err(failed(format!("cannot update {path}: it does not exist")));
                    };
                    let (new, notes) = hunks::apply(text, hunks).map_err(|e| failed(format!("{path}: {e}")))?;
                    let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
                    match move_to {
                        Some(to) => {
                            plan.files[i].after = None;
                            let j = plan.file(to, cx).await?;
                            plan.files[j].after = Some(new);
                            plan.summary.push(format!("M {path} -> {to}{notes}"));
                        }
                        None => {
                            plan.files[i].after = Some(new);
                            plan.summary.push(format!("M {path}{notes}"));
                        }
                    }
                }
            }
        }
        Ok(plan)
    }

    /// Writes a plan: new and changed files first, then deletions (a moved file's new place is
    /// written before its old one goes).
    async fn apply(plan: Plan, cx: &ToolContext<'_>) -> Result<Output, ToolError> {
        let diffs = plan.diffs();
        let files = cx.files();
        let mut done = Vec::new();
        for f in plan.changed() {
            if let Some(text) = &f.after {
                files.write(cx.jail, &f.path, text.clone()).await?;
                done.push(f.resolved.display().to_string());
            }
        }
        for f in plan.changed().filter(|f| f.after.is_none()) {
            cx.jail.remove_file(&f.path)?;
            done.push(f.resolved.display().to_string());
        }
        let summary = format!("Applied the patch:\n{}", plan.summary.join("\n"));
        Ok(Output {
            for_model: summary.clone(),
            content: diffs,
            raw: json!({ "files": done, "result": summary }),
            ok: true,
            images: Vec::new(),
        })
    }
}

const DESCRIPTION: &str = r#"Edit files with a patch: add, delete, update and move several files in one call. All or nothing: if any part does not apply, no file is changed.

The patch is a stripped-down, file-oriented diff:

*** Begin Patch
[ one or more file operations ]
*** End Patch

Each operation starts with a header:
*** Add File: <path> - create a file; every following line is a + line (its content).
*** Delete File: <path> - delete a file; nothing follows.
*** Update File: <path> - change a file, optionally followed by *** Move to: <new path> to rename it, then one or more hunks.

A hunk starts with @@, optionally followed by a line of the file that locates it (a class or function header). Its lines start with ' ' (context, unchanged), '-' (removed) or '+' (added). Show 3 lines of context above and below each change; do not repeat context between changes closer than that. If 3 lines are not enough to find the place uniquely, add @@ lines naming the enclosing class and function, each found after the one before:

@@ class BaseClass
@@     def method():
 [3 lines of context]
-[old line]
+[new line]
 [3 lines of context]

End a hunk that ends the file with *** End of File. Context and removed lines are matched exactly if possible, else ignoring trailing whitespace, then indentation, then Unicode punctuation; the result says when that happened.

Grammar:
Patch := "*** Begin Patch" NEWLINE { FileOp } "*** End Patch" NEWLINE
FileOp := AddFile | DeleteFile | UpdateFile
AddFile := "*** Add File: " path NEWLINE { "+" line NEWLINE }
DeleteFile := "*** Delete File: " path NEWLINE
UpdateFile := "*** Update File: " path NEWLINE [ "*** Move to: " path NEWLINE ] { Hunk }
Hunk := { "@@" [ header ] NEWLINE } { (" " | "-" | "+") line NEWLINE } [ "*** End of File" NEWLINE ]

Example:
*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-    print("Hi")
+    print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch

Always give an operation header, prefix every line of a new file with +, and use paths relative to the working directory."#;

impl Tool for ApplyPatch {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            NAME,
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The whole patch, from *** Begin Patch to *** End Patch."}},
                "required": ["input"]
            }),
        )
    }

    /// Every path, destinations included, goes through the jail before anything is shown.
    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let ops = parsed(args)?;
        let mut resolved: Vec<PathBuf> = Vec::new();
        for path in ops.iter().flat_map(FileOp::paths) {
            let r = jail.resolve(path)?;
            if !resolved.contains(&r) {
                resolved.push(r);
            }
        }
        let shown: Vec<String> = resolved.iter().map(|p| display(p, jail)).collect();
        let title = match shown.len() {
            0..=3 => format!("Patch {}", shown.join(", ")),
            n => format!("Patch {} and {} more", shown[..2].join(", "), n - 2),
        };
        let all: Vec<String> = resolved.iter().map(|p| p.display().to_string()).collect();
        Ok(Announce {
            kind: ToolKind::Edit,
            title,
            locations: resolved.iter().map(|p| location(p, None)).collect(),
            needs: Needs::Edit(all.join(", ")),
        })
    }

    fn preview<'a>(
        &'a self,
        args: &'a Value,
        cx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Vec<ToolContent>, ToolError>> {
        Box::pin(async move { Ok(Self::plan(args, cx).await?.diffs()) })
    }

    /// Plans again (a file may have changed while the user was asked), then writes.
    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move { Self::apply(Self::plan(args, cx).await?, cx).await })
    }
}
