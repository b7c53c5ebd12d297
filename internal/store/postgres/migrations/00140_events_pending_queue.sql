-- +goose Up
-- The events not yet fanned out wait in a queue of their own, events_pending: a copy of each
-- event as the relay reads it, added when the event is written (the trigger below, once per
-- statement, whatever statement writes events) and deleted when it is fanned out. The relay
-- reads the queue alone, in seq order, so its cost follows what waits, never the history, with
-- no join for the planner to get wrong. The events table is written once per event and never
-- updated: marking an event fanned out changed a column of an index's predicate, so each mark
-- wrote a new copy of the row and an entry in each of the table's indexes, and left a dead row.
DROP INDEX events_pending;
CREATE TABLE events_pending (
    seq        BIGINT PRIMARY KEY, -- the event's events.seq
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    product    TEXT NOT NULL,
    status     TEXT NOT NULL,
    error_code TEXT NOT NULL,
    charged    BIGINT NOT NULL,
    reserved   BIGINT NOT NULL,
    webhook    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
INSERT INTO events_pending
SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at
FROM events WHERE fanned_out = 0;
ALTER TABLE events DROP COLUMN fanned_out;
-- +goose StatementBegin
CREATE FUNCTION events_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events_pending
    SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at
    FROM written;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER events_enqueue AFTER INSERT ON events REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION events_enqueue();

-- +goose Down
DROP TRIGGER events_enqueue ON events;
DROP FUNCTION events_enqueue();
ALTER TABLE events ADD COLUMN fanned_out INTEGER NOT NULL DEFAULT 1;
UPDATE events SET fanned_out = 0 WHERE seq IN (SELECT seq FROM events_pending);
DROP TABLE events_pending;
CREATE INDEX events_pending ON events(seq) WHERE fanned_out = 0;
