-- awaken-lua's PostgreSQL schema, version 1: threads and runs.
CREATE SEQUENCE awaken_revisions;

CREATE TABLE awaken_threads (
	id       text PRIMARY KEY,
	revision bigint NOT NULL,
	waiting  text NOT NULL DEFAULT '',
	body     bytea NOT NULL
);

CREATE TABLE awaken_runs (
	id         text PRIMARY KEY,
	thread_id  text NOT NULL,
	seq        bigint NOT NULL,
	status     text NOT NULL,
	next_expiry timestamptz,
	body       bytea NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX awaken_runs_expiry ON awaken_runs (next_expiry) WHERE next_expiry IS NOT NULL;
