//! A file change (write_file, edit_file) worked out before it is written: the permission
//! question shows its diff, and an edit that cannot apply fails before anyone is asked.

use futures_util::future::BoxFuture;
use serde_json::json;

use super::files::Files;
use super::review::Part;
use super::{Announce, Jail, Needs, Output, ToolContext, ToolError, display, location};
use crate::event::{ToolContent, ToolKind};

/// The announcement of a change to `path`.
pub fn announce(verb: &str, path: &str, jail: &Jail) -> Result<Announce, ToolError> {
    let resolved = jail.resolve(path)?;
    Ok(Announce {
        kind: ToolKind::Edit,
        title: format!("{verb} {}", display(&resolved, jail)),
        locations: vec![location(&resolved, None)],
        needs: Needs::Edit(resolved.display().to_string()),
    })
}

/// A change worked out but not yet written.
pub struct Change {
    pub path: String,
    pub resolved: std::path::PathBuf,
    pub old: Option<String>,
    pub new: String,
    pub summary: String,
}

impl Change {
    /// The proposed change as diff content.
    pub fn diff(&self) -> ToolContent {
        ToolContent::Diff { path: self.resolved.clone(), old: self.old.clone(), new: self.new.clone() }
    }

    /// Writes it, or only the hunks of `part` the user kept. Callers plan again right before
    /// applying, so edits the user made while a permission question was open are not
    /// overwritten with a stale text (and a part approved of another text is not written).
    pub async fn apply(self, jail: &Jail, files: &Files<'_>, part: Option<&Part>) -> Result<Output, ToolError> {
        let (text, for_model) = match part {
            None => (self.new, self.summary.clone()),
            Some(part) => match part.text_for(self.old.as_deref(), &self.new) {
                Some(kept) => (kept, format!("{}\n\n{}", self.summary, part.note())),
                None => return Ok(changed_meanwhile(&self.resolved)),
            },
        };
        let (resolved, new) = files.write(jail, &self.path, text).await?;
        let diff = ToolContent::Diff { path: resolved.clone(), old: self.old, new };
        let rejected: Vec<usize> = part.map(|p| p.rejected.iter().map(|i| i + 1).collect()).unwrap_or_default();
        let mut raw = json!({ "path": resolved, "result": self.summary });
        if !rejected.is_empty() {
            raw["rejectedHunks"] = json!(rejected);
        }
        Ok(Output { for_model, content: vec![diff], raw, ok: true, images: Vec::new() })
    }
}

/// The result of a change approved in part when the file changed while the user was asked:
/// nothing is written, since the hunks they kept were hunks of another text.
fn changed_meanwhile(path: &std::path::Path) -> Output {
    const WHY: &str =
        "The file changed while the user was asked, so the part of the change they approved no longer fits it";
    Output {
        for_model: format!("{WHY}; nothing was written. Read the file again and propose the change anew."),
        content: vec![ToolContent::Text(format!("{WHY}; nothing was written."))],
        raw: json!({ "path": path, "error": WHY }),
        ok: false,
        images: Vec::new(),
    }
}

/// `Tool::preview` of a change tool: the diff of what `plan` works out.
pub fn preview<'a>(
    plan: impl Future<Output = Result<Change, ToolError>> + Send + 'a,
) -> BoxFuture<'a, Result<Vec<ToolContent>, ToolError>> {
    Box::pin(async move { Ok(vec![plan.await?.diff()]) })
}

/// `Tool::run` of a change tool: `plan` again (the file may have changed while the user was
/// asked), then write it.
pub fn run<'a>(
    plan: impl Future<Output = Result<Change, ToolError>> + Send + 'a,
    cx: &'a ToolContext<'a>,
) -> BoxFuture<'a, Result<Output, ToolError>> {
    Box::pin(async move { plan.await?.apply(cx.jail, &cx.files(), cx.part).await })
}
