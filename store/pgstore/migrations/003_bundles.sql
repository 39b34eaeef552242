-- Version 3: plugin bundles. A bundle is a plugin directory's files, by
-- the SHA-256 of their paths and contents; the published one is what
-- every replica loads.
CREATE TABLE awaken_bundles (
	hash       text PRIMARY KEY,
	files      bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE awaken_published (
	id           int PRIMARY KEY CHECK (id = 1),
	hash         text NOT NULL REFERENCES awaken_bundles (hash),
	published_at timestamptz NOT NULL DEFAULT now()
);
