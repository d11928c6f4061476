-- A key's own token limits, a minute's and a day's (0: the configured default), which the gateway counts from the
-- upstreams' usage. Additive: an older binary ignores them.
ALTER TABLE api_keys ADD COLUMN tokens_per_minute BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN tokens_per_day BIGINT NOT NULL DEFAULT 0;
