-- Turn owners that are unique across hosts (a PostgreSQL fleet shares one store): pid and
-- start time only identify a process on its own host. `heartbeat_at` (Unix seconds by the
-- database's clock) is refreshed while the turn runs, for owners on other hosts.
ALTER TABLE turns ADD COLUMN owner_instance TEXT NOT NULL DEFAULT '';
ALTER TABLE turns ADD COLUMN owner_host TEXT NOT NULL DEFAULT '';
ALTER TABLE turns ADD COLUMN heartbeat_at BIGINT;
CREATE INDEX turns_running ON turns (owner_instance) WHERE status = 'running';
