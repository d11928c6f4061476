-- The organization, its workspaces and members, and API keys with their spend by UTC day.
CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at {{.Time}} NOT NULL
);

CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    slug       TEXT NOT NULL UNIQUE,
    created_at {{.Time}} NOT NULL
);

CREATE TABLE members (
    id         TEXT PRIMARY KEY,
    email      TEXT NOT NULL UNIQUE,
    first_name TEXT,
    last_name  TEXT,
    role       TEXT NOT NULL,
    created_at {{.Time}} NOT NULL
);

CREATE TABLE api_keys (
    hash                  TEXT PRIMARY KEY,
    name                  TEXT NOT NULL,
    label                 TEXT NOT NULL,
    management            BOOLEAN NOT NULL,
    disabled              BOOLEAN NOT NULL DEFAULT FALSE,
    limit_micros          BIGINT,
    limit_reset           TEXT NOT NULL DEFAULT '',
    include_byok_in_limit BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at            {{.Time}},
    workspace_id          TEXT NOT NULL REFERENCES workspaces (id),
    creator_user_id       TEXT,
    external_user         TEXT,
    requests_per_minute   INTEGER NOT NULL DEFAULT 0,
    created_at            {{.Time}} NOT NULL,
    updated_at            {{.Time}}
);

CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at);

CREATE TABLE key_usage (
    key_hash TEXT NOT NULL,
    day      TEXT NOT NULL,
    micros   BIGINT NOT NULL,
    PRIMARY KEY (key_hash, day)
);
