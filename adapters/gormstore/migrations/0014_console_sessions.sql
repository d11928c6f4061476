-- The web console's sign-in sessions (adapters/console): shared by every replica, so that a session opened on one
-- works on all. Only hashes are kept: the session token's (the cookie holds the token) and the hash of the
-- management key it was opened with, checked on every request so that disabling or deleting the key ends it.
CREATE TABLE console_sessions (
    token_hash TEXT PRIMARY KEY,
    key_hash   TEXT NOT NULL,
    created_at {{.Time}} NOT NULL,
    expires_at {{.Time}} NOT NULL
);

CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
