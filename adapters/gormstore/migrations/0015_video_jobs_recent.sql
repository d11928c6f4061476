-- The console's list of video jobs, newest first, pages by (created_at, id) from this index: no count, no offset.
CREATE INDEX video_jobs_created_at ON video_jobs (created_at);
