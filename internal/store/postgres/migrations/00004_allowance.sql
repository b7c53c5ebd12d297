-- +goose Up
-- Monthly allowances: the last UTC month whose allowance was credited. Accounts that exist when
-- this runs count the current month as credited (their balance stands for it); the allowance
-- is credited from the next month on.
ALTER TABLE accounts ADD COLUMN allowance_period TEXT NOT NULL DEFAULT '';
UPDATE accounts SET allowance_period = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM');

-- +goose Down
ALTER TABLE accounts DROP COLUMN allowance_period;
