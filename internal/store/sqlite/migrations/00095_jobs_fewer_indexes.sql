-- +goose Up
-- Every index of jobs is written when a job is inserted and again when its settlement changes
-- an indexed column, so the indexes a job touches on its way from submit to settled are kept to
-- those a read needs:
--   jobs_queue went unread (jobs_waiting serves the queue);
--   jobs_lease becomes jobs_stale, the running jobs only, by lease end;
--   jobs_in_flight and jobs_account_state become jobs_account_open (unsettled jobs, newest
--   first: the in-flight count and the queued and running filters) and jobs_account_done
--   (settled jobs by outcome, newest first: written once, at settlement).
DROP INDEX jobs_queue;
DROP INDEX jobs_lease;
CREATE INDEX jobs_stale ON jobs(lease_until) WHERE status = 'IN_PROGRESS';
DROP INDEX jobs_in_flight;
DROP INDEX jobs_account_state;
CREATE INDEX jobs_account_open ON jobs(account_id, created_at, id) WHERE status <> 'COMPLETED';
CREATE INDEX jobs_account_done ON jobs(account_id, outcome, created_at, id) WHERE status = 'COMPLETED';

-- +goose Down
DROP INDEX jobs_account_done;
DROP INDEX jobs_account_open;
CREATE INDEX jobs_account_state ON jobs(account_id, outcome, status, created_at, id);
CREATE INDEX jobs_in_flight ON jobs(account_id) WHERE status <> 'COMPLETED';
DROP INDEX jobs_stale;
CREATE INDEX jobs_lease ON jobs(status, lease_until);
CREATE INDEX jobs_queue ON jobs(model, status, priority, created_at);
