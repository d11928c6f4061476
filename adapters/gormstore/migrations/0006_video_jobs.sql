-- Video jobs, with their upstream ids, so that a restart loses none. Running jobs are found by their next poll.
CREATE TABLE video_jobs (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    key_hash       TEXT NOT NULL,
    user_id        TEXT,
    model          TEXT NOT NULL,
    provider       TEXT NOT NULL,
    upstream_model TEXT NOT NULL,
    upstream_id    TEXT NOT NULL,
    status         TEXT NOT NULL,
    detail         {{.JSON}} NOT NULL,
    error          TEXT NOT NULL,
    seconds        INTEGER NOT NULL,
    cost_micros    BIGINT NOT NULL,
    generation_id  TEXT NOT NULL,
    next_poll_at   {{.Time}} NOT NULL,
    expires_at     {{.Time}},
    created_at     {{.Time}} NOT NULL,
    updated_at     {{.Time}} NOT NULL,
    completed_at   {{.Time}}
);

CREATE INDEX video_jobs_due ON video_jobs (next_poll_at) WHERE status IN ('pending', 'in_progress');
