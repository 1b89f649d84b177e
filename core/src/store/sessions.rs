//! Session rows: one by id, and the keyset-paginated listing of `session/list`.
//!
//! The listing holds the sessions a user would pick up again: not deleted, not a subagent's
//! (those belong to their parent), with at least one prompt (an editor that opens a session on
//! start and never uses it leaves no clutter), and archived ones only when asked for.

use super::{Store, StoreError, with_pool};

/// A session row.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    pub id: String,
    pub cwd: String,
    pub additional_directories: Vec<String>,
    pub title: Option<String>,
    pub updated_at: String,
    pub model: Option<String>,
    pub mode: Option<String>,
    /// From the `config` JSON column.
    pub thought_level: Option<String>,
    /// The agent alias the session was created with.
    pub agent_alias: Option<String>,
    /// Whether `session/archive` took it out of the default listing.
    pub archived: bool,
    /// The client's `systemPrompt` text (from the `config` JSON column).
    pub system_prompt: Option<String>,
}

/// Which sessions a listing holds by their archive state (`session/list`'s `archived`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFilter {
    /// Only those not archived (the default).
    Exclude,
    /// Both.
    Include,
    /// Only archived ones.
    Only,
}

impl ArchiveFilter {
    fn as_str(self) -> &'static str {
        match self {
            ArchiveFilter::Exclude => "exclude",
            ArchiveFilter::Include => "include",
            ArchiveFilter::Only => "only",
        }
    }
}

/// `SELECT <the columns of a SessionRow> FROM sessions <rest>`, as one static string.
macro_rules! select_sessions {
    ($rest:literal) => {
        concat!(
            "SELECT id, cwd, additional_directories, title, updated_at, model, mode, config, agent_alias, \
             archived_at IS NOT NULL FROM sessions ",
            $rest
        )
    };
}

type SessionRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    bool,
);

impl Store {
    /// A live (not deleted) session.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let sql = select_sessions!("WHERE id = $1 AND deleted_at IS NULL");
        let row: Option<SessionRow> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(id).fetch_optional(pool).await?);
        row.map(session_record).transpose()
    }

    /// The ids of a session's subagents (live, oldest first).
    pub async fn children(&self, parent_id: &str) -> Result<Vec<String>, StoreError> {
        const SQL: &str = "SELECT id FROM sessions WHERE parent_id = $1 AND deleted_at IS NULL ORDER BY created_at, id";
        let rows: Vec<(String,)> =
            with_pool!(&self.pool, |pool| sqlx::query_as(SQL).bind(parent_id).fetch_all(pool).await?);
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The session a subagent's session belongs to (`None` for a top-level session).
    pub async fn parent_of(&self, id: &str) -> Result<Option<String>, StoreError> {
        const SQL: &str = "SELECT parent_id FROM sessions WHERE id = $1";
        let row: Option<(Option<String>,)> =
            with_pool!(&self.pool, |pool| sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?);
        Ok(row.and_then(|(p,)| p))
    }

    /// One page of sessions, most recently updated first. `after` is the (updated_at, id) of
    /// the last row of the previous page (keyset pagination: new sessions never shift pages).
    pub async fn list(
        &self,
        cwd: Option<&str>,
        archived: ArchiveFilter,
        after: Option<(String, String)>,
        limit: i64,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let (after_at, after_id) = after.unzip();
        let sql = select_sessions!(
            "WHERE deleted_at IS NULL AND parent_id IS NULL AND ($1 IS NULL OR cwd = $1) \
               AND ($2 IS NULL OR (updated_at, id) < ($2, $3)) \
               AND ($5 = 'include' OR ($5 = 'only') = (archived_at IS NOT NULL)) \
               AND EXISTS (SELECT 1 FROM turns WHERE turns.session_id = sessions.id) \
             ORDER BY updated_at DESC, id DESC LIMIT $4"
        );
        let rows: Vec<SessionRow> = with_pool!(&self.pool, |pool| sqlx::query_as(sql)
            .bind(cwd)
            .bind(after_at.as_deref())
            .bind(after_id.as_deref())
            .bind(limit)
            .bind(archived.as_str())
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(session_record).collect()
    }
}

fn session_record(
    (id, cwd, dirs, title, updated_at, model, mode, config, agent_alias, archived): SessionRow,
) -> Result<SessionRecord, StoreError> {
    let config = config.and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok());
    let config_text = |key: &str| config.as_ref().and_then(|c| c.get(key)?.as_str().map(str::to_string));
    Ok(SessionRecord {
        id,
        cwd,
        additional_directories: serde_json::from_str(&dirs)
            .map_err(|e| StoreError::Corrupt(format!("additional_directories of a session: {e}")))?,
        title,
        updated_at,
        model,
        mode,
        thought_level: config_text("thought_level"),
        agent_alias,
        archived,
        system_prompt: config_text("system_prompt"),
    })
}
