-- Presets and their immutable, numbered versions. (preset_id, version) is unique: numbering holds under
-- concurrency because versions are added under a row lock on the preset, and the constraint backs that up.
CREATE TABLE presets (
    id                    TEXT PRIMARY KEY,
    workspace_id          TEXT NOT NULL REFERENCES workspaces (id),
    name                  TEXT NOT NULL,
    slug                  TEXT NOT NULL,
    description           TEXT,
    status                TEXT NOT NULL,
    status_updated_at     {{.Time}},
    creator_user_id       TEXT,
    designated_version_id TEXT,
    created_at            {{.Time}} NOT NULL,
    updated_at            {{.Time}} NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE INDEX presets_workspace_updated ON presets (workspace_id, updated_at);

CREATE TABLE preset_versions (
    id            TEXT PRIMARY KEY,
    preset_id     TEXT NOT NULL REFERENCES presets (id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    config        {{.JSON}} NOT NULL,
    system_prompt TEXT,
    creator_id    TEXT NOT NULL,
    created_at    {{.Time}} NOT NULL,
    UNIQUE (preset_id, version)
);
