-- Generation records by day. On PostgreSQL, generations and generation_contents become tables partitioned by
-- day of created_at: a Go step does it (days_migrate.go), attaching the records a deployment has without
-- copying them. A content row gets its record's created_at, which it is partitioned by on PostgreSQL and
-- purged by on SQLite (generations.content_retention_days), where the tables stay single: SQLite serves one
-- process, and purges with DELETE.
--
-- The reads the gateway serves are indexed, and nothing else: by id (the primary key), newest first and by time
-- (created_at), by key and time, by session.
{{if not .Postgres}}
ALTER TABLE generation_contents ADD COLUMN created_at DATETIME NOT NULL DEFAULT '0001-01-01 00:00:00+00:00';
UPDATE generation_contents SET created_at = (SELECT g.created_at FROM generations g WHERE g.id = generation_contents.id);
CREATE INDEX generation_contents_created_at ON generation_contents (created_at);
CREATE INDEX generations_key ON generations (key_hash, created_at);
CREATE INDEX generations_session ON generations (session_id, created_at) WHERE session_id IS NOT NULL;
{{end}}
