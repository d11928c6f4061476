-- Activity: what the calls of a UTC day used, kept as their records are written, in the same transaction (see
-- charges.go), so that /activity, the console and workspace budgets read a few rows instead of scanning records.
-- generation_activity keeps each key apart (with the member who owns it), for the reads of one key or member;
-- workspace_activity sums a workspace's keys, so that a read of every key (/activity, a workspace's spend) reads a
-- row per day and endpoint however many keys call. A row is updated by many batches: on PostgreSQL its pages keep
-- room (fillfactor) for the new versions of their rows, which then need no new index entries (the counters are
-- not indexed).
CREATE TABLE generation_activity (
    day               TEXT NOT NULL,
    workspace_id      TEXT NOT NULL,
    key_hash          TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    model             TEXT NOT NULL,
    provider_name     TEXT NOT NULL,
    endpoint_id       TEXT NOT NULL,
    requests          BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    reasoning_tokens  BIGINT NOT NULL,
    cached_tokens     BIGINT NOT NULL,
    cost_micros       BIGINT NOT NULL,
    byok_cost_micros  BIGINT NOT NULL,
    PRIMARY KEY (day, workspace_id, key_hash, user_id, model, provider_name, endpoint_id)
){{if .Postgres}} WITH (fillfactor = 70){{end}};

CREATE INDEX generation_activity_key ON generation_activity (key_hash, day);
CREATE INDEX generation_activity_user ON generation_activity (user_id, day);

CREATE TABLE workspace_activity (
    day               TEXT NOT NULL,
    workspace_id      TEXT NOT NULL,
    model             TEXT NOT NULL,
    provider_name     TEXT NOT NULL,
    endpoint_id       TEXT NOT NULL,
    requests          BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    reasoning_tokens  BIGINT NOT NULL,
    cached_tokens     BIGINT NOT NULL,
    cost_micros       BIGINT NOT NULL,
    byok_cost_micros  BIGINT NOT NULL,
    PRIMARY KEY (day, workspace_id, model, provider_name, endpoint_id)
){{if .Postgres}} WITH (fillfactor = 70){{end}};

CREATE INDEX workspace_activity_workspace ON workspace_activity (workspace_id, day);

-- The records written before: summed once, as Record.Activity counts one (its endpoint is its last attempt's). The
-- sums are hashed in memory rather than sorted on disk (a million records make some 150,000 rows).
{{if .Postgres}}
SET LOCAL work_mem = '256MB';
{{end}}
INSERT INTO generation_activity (day, workspace_id, key_hash, user_id, model, provider_name, endpoint_id, requests,
    prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micros, byok_cost_micros)
SELECT
{{- if .Postgres}}
    to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), workspace_id, key_hash, COALESCE(user_id, ''), model,
    provider_name, COALESCE(ltrim(attempts, chr(1))::json -> -1 ->> 'endpoint_id', ''),
{{- else}}
    date(created_at), workspace_id, key_hash, COALESCE(user_id, ''), model, provider_name,
    COALESCE(json_extract(attempts, '$[#-1].endpoint_id'), ''),
{{- end}}
    count(*), sum(tokens_prompt), sum(tokens_completion), sum(native_tokens_reasoning), sum(native_tokens_cached),
    sum(total_cost_micros), sum(CASE WHEN is_byok THEN total_cost_micros ELSE 0 END)
FROM generations GROUP BY 1, 2, 3, 4, 5, 6, 7;

INSERT INTO workspace_activity (day, workspace_id, model, provider_name, endpoint_id, requests, prompt_tokens,
    completion_tokens, reasoning_tokens, cached_tokens, cost_micros, byok_cost_micros)
SELECT day, workspace_id, model, provider_name, endpoint_id, sum(requests), sum(prompt_tokens), sum(completion_tokens),
    sum(reasoning_tokens), sum(cached_tokens), sum(cost_micros), sum(byok_cost_micros)
FROM generation_activity GROUP BY 1, 2, 3, 4, 5;
