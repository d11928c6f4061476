-- Reservations of the estimated cost of calls in flight against a key's own limit and against the organization's
-- credits: taken at admission (id is the call's generation id), deleted in the transaction that writes the call's
-- generation record and books its cost, or ignored once expired (a call whose process died before recording it).
CREATE TABLE key_holds (
    id            TEXT PRIMARY KEY,
    key_hash      TEXT NOT NULL,
    amount_micros BIGINT NOT NULL,
    expires_at    {{.Time}} NOT NULL
);

CREATE INDEX key_holds_key ON key_holds (key_hash, expires_at);

CREATE TABLE credit_holds (
    id            TEXT PRIMARY KEY,
    amount_micros BIGINT NOT NULL,
    expires_at    {{.Time}} NOT NULL
);
