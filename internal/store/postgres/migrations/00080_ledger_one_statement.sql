-- +goose Up
-- The entry names its job's model, as on SQLite (where a trigger keys the usage rollup by it).
ALTER TABLE ledger_entries ADD COLUMN model TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE ledger_entries DROP COLUMN model;
