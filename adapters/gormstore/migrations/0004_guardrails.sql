-- Guardrails, who holds them (a member or a key holds at most one: UNIQUE), and their budgets: the settled
-- spend per window, and holds that reserve the estimated cost of calls in flight until they settle or expire.
CREATE TABLE guardrails (
    id                      TEXT PRIMARY KEY,
    workspace_id            TEXT NOT NULL REFERENCES workspaces (id),
    name                    TEXT NOT NULL,
    description             TEXT,
    limit_micros            BIGINT,
    reset_interval          TEXT NOT NULL,
    allowed_models          {{.JSON}},
    ignored_models          {{.JSON}},
    allowed_providers       {{.JSON}},
    ignored_providers       {{.JSON}},
    allowed_data_regions    {{.JSON}},
    content_filters         {{.JSON}},
    content_filter_builtins {{.JSON}},
    include_byok_in_budgets BOOLEAN NOT NULL,
    created_at              {{.Time}} NOT NULL,
    updated_at              {{.Time}}
);

CREATE INDEX guardrails_workspace ON guardrails (workspace_id, created_at);

CREATE TABLE guardrail_member_assignments (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL UNIQUE REFERENCES members (id) ON DELETE CASCADE,
    guardrail_id TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    assigned_by  TEXT,
    created_at   {{.Time}} NOT NULL
);

CREATE INDEX guardrail_member_assignments_guardrail ON guardrail_member_assignments (guardrail_id, created_at);

CREATE TABLE guardrail_key_assignments (
    id           TEXT PRIMARY KEY,
    key_hash     TEXT NOT NULL UNIQUE REFERENCES api_keys (hash) ON DELETE CASCADE,
    guardrail_id TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    assigned_by  TEXT,
    created_at   {{.Time}} NOT NULL
);

CREATE INDEX guardrail_key_assignments_guardrail ON guardrail_key_assignments (guardrail_id, created_at);

CREATE TABLE guardrail_budgets (
    guardrail_id TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    window_start TEXT NOT NULL,
    spent_micros BIGINT NOT NULL,
    PRIMARY KEY (guardrail_id, window_start)
);

CREATE TABLE guardrail_holds (
    id            TEXT PRIMARY KEY,
    guardrail_id  TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    window_start  TEXT NOT NULL,
    amount_micros BIGINT NOT NULL,
    expires_at    {{.Time}} NOT NULL
);

CREATE INDEX guardrail_holds_window ON guardrail_holds (guardrail_id, window_start, expires_at);
