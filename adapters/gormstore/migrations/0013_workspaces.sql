-- Workspaces get a description, their members and their budgets (issue 35); a call admitted under a workspace
-- budget holds its estimate in workspace_holds until its record is written, as key_holds does for a key's
-- limit. Generation feedback is kept by generation. Additive: an older binary ignores them.
ALTER TABLE workspaces ADD COLUMN description TEXT;
ALTER TABLE workspaces ADD COLUMN updated_at {{.Time}};

CREATE TABLE workspace_members (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);

CREATE TABLE workspace_budgets (
    id             TEXT NOT NULL UNIQUE,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    reset_interval TEXT NOT NULL,
    limit_micros   BIGINT NOT NULL,
    include_byok   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     {{.Time}} NOT NULL,
    updated_at     {{.Time}} NOT NULL,
    PRIMARY KEY (workspace_id, reset_interval)
);

CREATE TABLE workspace_holds (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    amount_micros BIGINT NOT NULL,
    expires_at    {{.Time}} NOT NULL
);

CREATE INDEX workspace_holds_workspace ON workspace_holds (workspace_id, expires_at);

CREATE TABLE generation_feedback (
    id            TEXT PRIMARY KEY,
    generation_id TEXT NOT NULL,
    workspace_id  TEXT NOT NULL,
    key_hash      TEXT NOT NULL,
    category      TEXT NOT NULL,
    comment       TEXT,
    created_at    {{.Time}} NOT NULL
);

CREATE INDEX generation_feedback_generation ON generation_feedback (generation_id);
