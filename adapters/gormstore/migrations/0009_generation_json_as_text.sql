-- A record's attempts and flags and its content's input, output and failure are JSON that the store writes with
-- encoding/json and reads back whole; no statement looks inside them. As JSONB, PostgreSQL parsed each value into
-- its binary form on every write (jsonb_recv: about a tenth of the server's CPU per record the recorder writes)
-- and printed it again on every read. As TEXT it stores and returns the bytes, as SQLite always has. The change
-- rewrites both tables (see CHANGELOG.md).
{{if .Postgres}}
ALTER TABLE generations ALTER COLUMN attempts TYPE TEXT, ALTER COLUMN flags TYPE TEXT;
ALTER TABLE generation_contents ALTER COLUMN input TYPE TEXT, ALTER COLUMN output TYPE TEXT,
    ALTER COLUMN failure TYPE TEXT;
{{end}}
