-- key_activity sums each key's activity of a day over its members, models and endpoints: what a read of every key
-- by key alone (the console's overview, /activity?group_by=key) needs, a row per day and key, where
-- generation_activity holds one per day, key, member, model and endpoint (87,000 rows for 30 days at 200 keys in a
-- benchmark, read in 70 ms, against some 6,000 here). It is kept in the recorder's transaction as the other two are.
CREATE TABLE key_activity (
    day               TEXT NOT NULL,
    workspace_id      TEXT NOT NULL,
    key_hash          TEXT NOT NULL,
    requests          BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    reasoning_tokens  BIGINT NOT NULL,
    cached_tokens     BIGINT NOT NULL,
    cost_micros       BIGINT NOT NULL,
    byok_cost_micros  BIGINT NOT NULL,
    PRIMARY KEY (day, workspace_id, key_hash)
){{if .Postgres}} WITH (fillfactor = 70){{end}};

CREATE INDEX key_activity_key ON key_activity (key_hash, day);

INSERT INTO key_activity (day, workspace_id, key_hash, requests, prompt_tokens, completion_tokens, reasoning_tokens,
    cached_tokens, cost_micros, byok_cost_micros)
SELECT day, workspace_id, key_hash, sum(requests), sum(prompt_tokens), sum(completion_tokens), sum(reasoning_tokens),
    sum(cached_tokens), sum(cost_micros), sum(byok_cost_micros)
FROM generation_activity GROUP BY 1, 2, 3;
