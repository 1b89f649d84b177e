//! The stored "always" permission answers of a session, and revoking one.

use super::{Store, StoreError, time, with_pool};

/// A stored "always" permission answer.
#[derive(Debug, Clone)]
pub struct StoredRule {
    pub id: i64,
    pub tool: String,
    pub scope: String,
    pub allow: bool,
    pub created_at: String,
}

impl Store {
    /// The session's "always" answers that are still in force, oldest first.
    pub async fn rules(&self, session_id: &str) -> Result<Vec<StoredRule>, StoreError> {
        let sql = "SELECT id, tool, scope, decision, created_at FROM permission_rules \
                   WHERE (session_id = $1 OR session_id IS NULL) AND revoked_at IS NULL ORDER BY id";
        let rows: Vec<(i64, String, String, String, String)> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).fetch_all(pool).await?);
        Ok(rows
            .into_iter()
            .map(|(id, tool, scope, decision, created_at)| StoredRule {
                id,
                tool,
                scope,
                allow: decision == "allow",
                created_at,
            })
            .collect())
    }

    /// Revokes a rule of the session; returns it if it existed and was in force.
    pub async fn revoke_rule(&self, session_id: &str, id: i64) -> Result<Option<StoredRule>, StoreError> {
        let rule = self.rules(session_id).await?.into_iter().find(|r| r.id == id);
        if rule.is_some() {
            let sql = "UPDATE permission_rules SET revoked_at = $1 WHERE id = $2";
            let now = time::now_rfc3339();
            with_pool!(&self.pool, |pool| sqlx::query(sql).bind(&now).bind(id).execute(pool).await.map(drop)?);
        }
        Ok(rule)
    }
}
