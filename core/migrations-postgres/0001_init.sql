-- Corvid session store, PostgreSQL edition: the same tables and columns as
-- migrations/0001_init.sql (SQLite). Integers are BIGINT so both decode as i64; JSON stays
-- TEXT, as in SQLite. Timestamps are RFC 3339 UTC strings (sortable as text).

CREATE TABLE sessions (
    id                      TEXT PRIMARY KEY,
    cwd                     TEXT NOT NULL,
    additional_directories  TEXT NOT NULL DEFAULT '[]',   -- JSON array of absolute paths
    title                   TEXT,
    created_at              TEXT NOT NULL,
    updated_at              TEXT NOT NULL,
    agent_alias             TEXT,
    mode                    TEXT,
    model                   TEXT,
    config                  TEXT NOT NULL DEFAULT '{}',   -- other config state, JSON object
    deleted_at              TEXT
);
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC);

-- The event ledger: every session/update `update` payload exactly as it was sent, in order.
CREATE TABLE events (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    turn        BIGINT,                 -- the prompt turn that emitted it (NULL outside turns)
    payload     TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- The model's context: user and assistant messages in order.
CREATE TABLE messages (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,          -- JSON
    PRIMARY KEY (session_id, seq)
);

-- Prompt turns, so a turn cut short by a crash can be recognised and closed on load.
CREATE TABLE turns (
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn         BIGINT NOT NULL,
    status       TEXT NOT NULL,         -- running | finished | interrupted
    stop_reason  TEXT,
    owner_pid    BIGINT NOT NULL,
    owner_start  TEXT NOT NULL,         -- the owner's process start time, to tell pid reuse apart
    started_at   TEXT NOT NULL,
    ended_at     TEXT,
    PRIMARY KEY (session_id, turn)
);

-- "Always" answers to permission requests: durable and revocable.
CREATE TABLE permission_rules (
    id          BIGSERIAL PRIMARY KEY,
    session_id  TEXT REFERENCES sessions (id) ON DELETE CASCADE,  -- NULL: every session
    tool        TEXT NOT NULL,
    scope       TEXT NOT NULL,          -- exact path or command prefix
    decision    TEXT NOT NULL,          -- allow | reject
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
