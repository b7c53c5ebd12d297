-- +goose Up
-- A key's name, given by its owner when minting it ('' when none).
ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE api_keys DROP COLUMN name;
