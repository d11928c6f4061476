-- The organization's credit balance (one row), and each top-up for the record.
CREATE TABLE credit_balance (
    id           INTEGER PRIMARY KEY,
    total_micros BIGINT NOT NULL,
    used_micros  BIGINT NOT NULL
);

INSERT INTO credit_balance (id, total_micros, used_micros) VALUES (1, 0, 0);

CREATE TABLE credit_grants (
    id            TEXT PRIMARY KEY,
    amount_micros BIGINT NOT NULL,
    created_at    {{.Time}} NOT NULL
);
