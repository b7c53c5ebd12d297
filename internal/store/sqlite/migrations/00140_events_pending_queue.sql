-- +goose Up
-- The events not yet fanned out wait in a queue of their own, events_pending: a copy of each
-- event as the relay reads it, added when the event is written (the trigger below, whatever
-- statement writes it) and deleted when it is fanned out. The relay reads the queue alone, in
-- seq order, so its cost follows what waits, never the history; and the events table is
-- written once per event and never rewritten (marking an event fanned out rewrote its row and
-- moved its entry out of a partial index).
--
-- The events table is copied to drop its fanned_out flag, and with it AUTOINCREMENT: no event
-- is ever deleted, so a new seq (the largest plus one) is never one given before, and the
-- COMMIT that writes an event no longer writes sqlite_sequence's page too.
DROP INDEX events_pending;
CREATE TABLE events_pending (
    seq        INTEGER PRIMARY KEY, -- the event's events.seq
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
CREATE TABLE events_new (
    seq        INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    product    TEXT NOT NULL,
    status     TEXT NOT NULL,
    error_code TEXT NOT NULL DEFAULT '',
    charged    BIGINT NOT NULL,
    reserved   BIGINT NOT NULL,
    webhook    TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    UNIQUE (id, account_id)
);
INSERT INTO events_new
SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at
FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
-- +goose StatementBegin
CREATE TRIGGER events_enqueue AFTER INSERT ON events
BEGIN
    INSERT INTO events_pending VALUES (NEW.seq, NEW.account_id, NEW.id, NEW.job_id, NEW.request_id, NEW.type,
        NEW.product, NEW.status, NEW.error_code, NEW.charged, NEW.reserved, NEW.webhook, NEW.created_at);
END;
-- +goose StatementEnd

-- +goose Down
CREATE TABLE events_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    product    TEXT NOT NULL,
    status     TEXT NOT NULL,
    error_code TEXT NOT NULL DEFAULT '',
    charged    BIGINT NOT NULL,
    reserved   BIGINT NOT NULL,
    webhook    TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    fanned_out INTEGER NOT NULL DEFAULT 0,
    UNIQUE (id, account_id)
);
INSERT INTO events_new
SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at,
       CASE WHEN seq IN (SELECT seq FROM events_pending) THEN 0 ELSE 1 END
FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
DROP TABLE events_pending;
CREATE INDEX events_pending ON events(seq) WHERE fanned_out = 0;
