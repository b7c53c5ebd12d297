-- +goose Up
-- Studio tickets: the one-use credentials a browser's live connection presents. A ticket is
-- signed, so the table holds only the nonces already presented (until they expire), which is
-- what makes a ticket single-use across processes.
CREATE TABLE studio_tickets (
    nonce      TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX studio_tickets_expires ON studio_tickets(expires_at);

-- A document's lineage: its generation, 0 until its first whole-document save, then advanced
-- by each save; and retired, the clock ranges of each Yjs client that the saves dropped
-- (studio's encoding), so a live client holding a copy of an older generation cannot merge it
-- back.
ALTER TABLE studio_documents ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE studio_documents ADD COLUMN retired BLOB NOT NULL DEFAULT X'';

-- +goose Down
ALTER TABLE studio_documents DROP COLUMN retired;
ALTER TABLE studio_documents DROP COLUMN generation;
DROP TABLE studio_tickets;
