-- +goose Up
-- The relay reads the events not yet fanned out, oldest first. events_pending held every event
-- ever written, (fanned_out, seq): each fan-out moved an entry from one end to the other, and
-- the index grew with the history. It now holds the pending events only: an event enters it
-- when written and leaves it when fanned out, and the relay's read is one scan of what waits.
DROP INDEX events_pending;
CREATE INDEX events_pending ON events(seq) WHERE fanned_out = 0;

-- +goose Down
DROP INDEX events_pending;
CREATE INDEX events_pending ON events(fanned_out, seq);
