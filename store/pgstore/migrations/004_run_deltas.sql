-- Version 4: a run is its saved checkpoint (awaken_runs.body, at the save
-- count inside it) plus the changes saved since, one row per save, so a
-- save writes what it changed rather than the whole run.
CREATE TABLE awaken_run_deltas (
	run_id text NOT NULL,
	seq    bigint NOT NULL,
	body   bytea NOT NULL,
	PRIMARY KEY (run_id, seq)
);

-- The save count of the checkpoint in body: a run whose changes since run
-- far ahead of it is compacted.
ALTER TABLE awaken_runs ADD COLUMN base_seq bigint NOT NULL DEFAULT 0;
