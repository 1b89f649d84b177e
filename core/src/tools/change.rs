//! A file change (write_file, edit_file) worked out before it is written: the permission
//! question shows its diff, and an edit that cannot apply fails before anyone is asked.

use futures_util::future::BoxFuture;
use serde_json::json;

use super::files::Files;
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

    /// Writes it. Callers plan again right before applying, so edits the user made while a
    /// permission question was open are not overwritten with a stale text.
    pub async fn apply(self, jail: &Jail, files: &Files<'_>) -> Result<Output, ToolError> {
        let (resolved, new) = files.write(jail, &self.path, self.new).await?;
        let diff = ToolContent::Diff { path: resolved.clone(), old: self.old, new };
        Ok(Output {
            for_model: self.summary.clone(),
            content: vec![diff],
            raw: json!({ "path": resolved, "result": self.summary }),
            ok: true,
            images: Vec::new(),
        })
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
    Box::pin(async move { plan.await?.apply(cx.jail, &cx.files()).await })
}
