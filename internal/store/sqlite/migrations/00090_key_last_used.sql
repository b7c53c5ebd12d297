-- +goose Up
-- When a key last passed the gate, written by each serving process about once a minute.
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN last_used_at;
