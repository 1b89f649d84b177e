-- `session/archive`: an archived session leaves `session/list` unless the client asks for
-- archived ones; `session/unarchive` clears it.
ALTER TABLE sessions ADD COLUMN archived_at TEXT;
-- A subagent's session names the session that started it: it is stored with its parent and
-- never listed on its own.
ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions (id) ON DELETE CASCADE;
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;
