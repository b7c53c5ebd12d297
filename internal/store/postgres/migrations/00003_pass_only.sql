-- +goose Up
-- Pass-only plans: jobs run only when a pass or promotion pays (model_not_in_plan, pass_does_not_cover).
ALTER TABLE accounts ADD COLUMN pass_only INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN pass_only;
