-- Version 5: the decision journal, when [journal] kind = "postgres": each
-- replica's writer is a stream, a hash chain of its lines.
CREATE TABLE awaken_journal (
	seq        bigserial PRIMARY KEY,
	stream     text NOT NULL,
	line       bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX awaken_journal_age ON awaken_journal (created_at);
