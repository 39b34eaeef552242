-- Version 2: a replica claims a waiting run whose approval expired before
-- it settles it, so exactly one replica does; a claim lapses if the
-- replica dies before saving.
ALTER TABLE awaken_runs ADD COLUMN expiry_claim timestamptz;
