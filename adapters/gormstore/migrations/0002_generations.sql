-- Generation records: a narrow metadata row per generation, and its content in a table of its own, so that
-- prompt bodies never bloat the rows that lookups and purges scan. Money is integer micro-dollars; durations are
-- integer microseconds.
CREATE TABLE generations (
    id                              TEXT PRIMARY KEY,
    request_id                      TEXT NOT NULL,
    upstream_id                     TEXT NOT NULL,
    api_type                        TEXT NOT NULL,
    workspace_id                    TEXT NOT NULL,
    key_hash                        TEXT NOT NULL,
    user_id                         TEXT,
    model                           TEXT NOT NULL,
    provider_name                   TEXT NOT NULL,
    preset_id                       TEXT,
    router                          TEXT,
    origin                          TEXT NOT NULL,
    http_referer                    TEXT NOT NULL,
    user_agent                      TEXT NOT NULL,
    external_user                   TEXT NOT NULL,
    session_id                      TEXT,
    status                          INTEGER NOT NULL,
    streamed                        BOOLEAN NOT NULL,
    cancelled                       BOOLEAN NOT NULL,
    is_byok                         BOOLEAN NOT NULL,
    finish_reason                   TEXT NOT NULL,
    native_finish_reason            TEXT NOT NULL,
    latency_us                      BIGINT NOT NULL,
    generation_time_us              BIGINT NOT NULL,
    moderation_latency_us           BIGINT NOT NULL,
    tokens_prompt                   BIGINT NOT NULL,
    tokens_completion               BIGINT NOT NULL,
    native_tokens_prompt            BIGINT NOT NULL,
    native_tokens_completion        BIGINT NOT NULL,
    native_tokens_completion_images BIGINT NOT NULL,
    native_tokens_reasoning         BIGINT NOT NULL,
    native_tokens_cached            BIGINT NOT NULL,
    num_input_audio_prompt          BIGINT NOT NULL,
    num_media_prompt                BIGINT NOT NULL,
    num_media_completion            BIGINT NOT NULL,
    num_search_results              BIGINT NOT NULL,
    num_fetches                     BIGINT NOT NULL,
    total_cost_micros               BIGINT NOT NULL,
    upstream_cost_micros            BIGINT NOT NULL,
    cache_discount_micros           BIGINT,
    data_region                     TEXT NOT NULL,
    service_tier                    TEXT,
    web_search_engine               TEXT,
    attempts                        {{.JSON}} NOT NULL,
    flags                           {{.JSON}} NOT NULL,
    created_at                      {{.Time}} NOT NULL
);

CREATE INDEX generations_created_at ON generations (created_at);

CREATE TABLE generation_contents (
    id      TEXT PRIMARY KEY REFERENCES generations (id) ON DELETE CASCADE,
    input   {{.JSON}} NOT NULL,
    output  {{.JSON}} NOT NULL,
    failure {{.JSON}}
);
