-- +goose Up
-- The operator console lists accounts newest first, a page at a time (keyset on created_at, id):
-- this index serves that read without walking the whole table.
CREATE INDEX accounts_created ON accounts (created_at, id);

-- +goose Down
DROP INDEX accounts_created;
