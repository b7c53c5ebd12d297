package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
)

// closeRow is one settlement as the batch statement reads it (jsonb_to_recordset): the job's
// columns that a settlement writes (qUpdateJob), its key, and its event's own columns.
type closeRow struct {
	AccountID     string  `json:"account_id"`
	ID            string  `json:"id"`
	Status        string  `json:"status"`
	Outcome       string  `json:"outcome"`
	ErrorCode     string  `json:"error_code"`
	ErrorDetail   string  `json:"error_detail"`
	ErrorMessage  string  `json:"error_message"`
	Reserved      int64   `json:"reserved"`
	Charged       int64   `json:"charged"`
	Coverage      string  `json:"coverage"`
	StartBy       *int64  `json:"start_by"`
	ProviderJobID string  `json:"provider_job_id"`
	Dispatched    int     `json:"dispatched"`
	CancelAsked   int     `json:"cancel_asked"`
	Result        string  `json:"result"`
	Logs          string  `json:"logs"`
	Metrics       string  `json:"metrics"`
	Progress      float64 `json:"progress"`
	LeaseOwner    string  `json:"lease_owner"`
	LeaseUntil    *int64  `json:"lease_until"`
	Attempts      int     `json:"attempts"`
	StartedAt     *int64  `json:"started_at"`
	FinishedAt    *int64  `json:"finished_at"`
	EvID          string  `json:"ev_id"`
	EvRequestID   string  `json:"ev_request_id"`
	EvType        string  `json:"ev_type"`
	EvProduct     string  `json:"ev_product"`
	EvStatus      string  `json:"ev_status"`
	EvErrorCode   string  `json:"ev_error_code"`
	EvCharged     int64   `json:"ev_charged"`
	EvReserved    int64   `json:"ev_reserved"`
	EvWebhook     string  `json:"ev_webhook"`
	EvCreatedAt   int64   `json:"ev_created_at"`
}

// closeRowOf is the row of job j and its event ev; a job without an event (nil) has an empty
// ev_id, and the statement writes no event for it.
func closeRowOf(j jobs.Job, ev *jobs.Event) closeRow {
	t := textsOf(j)
	r := closeRow{AccountID: j.AccountID, ID: j.ID, Status: string(j.Status), Outcome: string(j.Outcome), ErrorCode: j.ErrorCode,
		ErrorDetail: t.errorDetail, ErrorMessage: j.ErrorMessage, Reserved: j.Reserved, Charged: j.Charged, Coverage: t.coverage,
		StartBy: microsPtr(j.StartBy), ProviderJobID: j.ProviderJobID, Dispatched: boolInt(j.Dispatched), CancelAsked: boolInt(j.CancelAsked),
		Result: t.result, Logs: t.logs, Metrics: t.metrics, Progress: j.Progress, LeaseOwner: j.LeaseOwner,
		LeaseUntil: microsPtr(j.LeaseUntil), Attempts: j.Attempts, StartedAt: microsPtr(j.StartedAt), FinishedAt: microsPtr(j.FinishedAt)}
	if ev != nil {
		r.EvID, r.EvRequestID, r.EvType, r.EvProduct, r.EvStatus, r.EvErrorCode = ev.ID, ev.RequestID, ev.Type, ev.Product, string(ev.Status), ev.ErrorCode
		r.EvCharged, r.EvReserved, r.EvWebhook, r.EvCreatedAt = ev.Charged, ev.Reserved, ev.Webhook, micros(ev.CreatedAt)
	}
	return r
}

// qCloseJobs settles the jobs of $1 (a JSON array of closeRow) that are not settled yet, inserts
// an event for each of those that has one (ev_id not empty), and answers their keys. The jobs
// are found by their ids as an array (an index scan), not by joining the rows: the planner
// takes a function's rows for a hundred and would otherwise scan a table of a few thousand jobs
// whole, the table of a service that has just started or of one whose statistics are old. (A
// plan the server made and kept for this prepared statement while the table was nearly empty
// scans it still, until the table's first ANALYZE: autovacuum's first pass, within a minute.)
const qCloseJobs = `WITH v AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(account_id text, id text, status text, outcome text,
 error_code text, error_detail text, error_message text, reserved bigint, charged bigint, coverage text, start_by bigint,
 provider_job_id text, dispatched integer, cancel_asked integer, result text, logs text, metrics text, progress double precision,
 lease_owner text, lease_until bigint, attempts integer, started_at bigint, finished_at bigint, ev_id text, ev_request_id text,
 ev_type text, ev_product text, ev_status text, ev_error_code text, ev_charged bigint, ev_reserved bigint, ev_webhook text,
 ev_created_at bigint)),
 u AS (UPDATE jobs j SET status = v.status, outcome = v.outcome, error_code = v.error_code, error_detail = v.error_detail,
   error_message = v.error_message, reserved = v.reserved, charged = v.charged, coverage = v.coverage, start_by = v.start_by,
   provider_job_id = v.provider_job_id, dispatched = v.dispatched, cancel_asked = v.cancel_asked, result = v.result, logs = v.logs,
   metrics = v.metrics, progress = v.progress, lease_owner = v.lease_owner, lease_until = v.lease_until, attempts = v.attempts,
   started_at = v.started_at, finished_at = v.finished_at
   FROM v WHERE j.id = ANY(ARRAY(SELECT id FROM v)) AND j.id = v.id AND j.account_id = v.account_id AND j.status <> 'COMPLETED'
   RETURNING j.account_id, j.id),
 e AS (INSERT INTO events (account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at)
   SELECT v.account_id, v.ev_id, v.id, v.ev_request_id, v.ev_type, v.ev_product, v.ev_status, v.ev_error_code, v.ev_charged,
   v.ev_reserved, v.ev_webhook, v.ev_created_at FROM v JOIN u ON u.account_id = v.account_id AND u.id = v.id
   WHERE v.ev_id <> ''
   ON CONFLICT (account_id, id) DO NOTHING)
 SELECT account_id, id FROM u`

// CloseJobs writes settled jobs with their events. On PostgreSQL it is one statement: every
// job's guarded update and, for each update that took, its event where it has one. On SQLite
// it is one transaction of CloseJob for each.
func (s Jobs) CloseJobs(ctx context.Context, cs []jobs.Closing) ([]bool, error) {
	took := make([]bool, len(cs))
	if s.DB.d.closeJobs == "" {
		err := s.DB.InTx(ctx, func(tx *Tx) error {
			for i, c := range cs {
				err := tx.CloseJob(ctx, c.Job, c.Event)
				if err != nil && !errors.Is(err, jobs.ErrSettled) {
					return err
				}
				took[i] = err == nil
			}
			return nil
		})
		return took, err
	}
	rows := make([]closeRow, len(cs))
	for i, c := range cs {
		rows[i] = closeRowOf(c.Job, c.Event)
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	updated := make(map[[2]string]bool, len(cs))
	if err := eachRow(s.DB.sql.QueryContext(ctx, s.DB.d.closeJobs, string(doc)))(func(row Row) error {
		var k [2]string
		if err := row.Scan(&k[0], &k[1]); err != nil {
			return err
		}
		updated[k] = true
		return nil
	}); err != nil {
		return nil, err
	}
	for i, c := range cs {
		took[i] = updated[[2]string{c.Job.AccountID, c.Job.ID}]
	}
	return took, nil
}

func microsPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMicro()
	return &v
}
