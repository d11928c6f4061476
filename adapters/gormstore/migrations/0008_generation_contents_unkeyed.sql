-- A content row's id is its record's, but the foreign key that said so cost PostgreSQL a trigger per content row
-- written: a lookup of the record and a lock on its row (written to the WAL), about a fifth of the server's CPU
-- per record the recorder writes. The store writes a content row only with its record, in one transaction, and
-- its purge deletes the contents with their records. SQLite keeps the key: dropping it means rebuilding the
-- table, and checking it costs SQLite a lookup in a page it holds, and no write.
{{if .Postgres}}
ALTER TABLE generation_contents DROP CONSTRAINT IF EXISTS generation_contents_id_fkey;
{{end}}
