package sqlstore

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
)

// Settlements together (PostgreSQL). A settlement that moves no credits writes its job and its
// outbox event in one statement of its own (CloseJob under InOneStatement). On PostgreSQL every
// such statement pays its round trip, its executor start and its COMMIT's WAL flush, which
// together cost more than the rows it writes. Here the settlements waiting at one moment are
// written by one statement: every job's guarded update and, for each update that took, its event.
// The statement is its own transaction, as each settlement's was: when it commits, every job of
// it is settled; when it fails, none is, and each settlement is written again on its own so that
// one bad row fails alone (a deadlock or a serialization failure is answered as it is, and each
// caller's InOneStatement runs its settlement again). Each caller is answered after the
// statement that holds its job returned; one who gave up before it ran is answered so, unwritten.
// A job named twice waits for the next statement, so one statement never settles a job twice.

// maxCloseBatch bounds the settlements one statement writes; closeRunners bounds the
// statements in flight at once. One, as for submits together (jobs/together.go): the next
// statement gathers while one is written, and a statement's cost is mostly its own.
const (
	maxCloseBatch = 64
	closeRunners  = 1
)

type closer struct {
	c       *conn
	mu      sync.Mutex
	pending []*closeReq
	running int
}

type closeReq struct {
	ctx  context.Context
	job  jobs.Job
	ev   jobs.Event
	done chan error
}

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

func closeRowOf(j jobs.Job, ev jobs.Event) closeRow {
	t := textsOf(j)
	return closeRow{AccountID: j.AccountID, ID: j.ID, Status: string(j.Status), Outcome: string(j.Outcome), ErrorCode: j.ErrorCode,
		ErrorDetail: t.errorDetail, ErrorMessage: j.ErrorMessage, Reserved: j.Reserved, Charged: j.Charged, Coverage: t.coverage,
		StartBy: microsPtr(j.StartBy), ProviderJobID: j.ProviderJobID, Dispatched: boolInt(j.Dispatched), CancelAsked: boolInt(j.CancelAsked),
		Result: t.result, Logs: t.logs, Metrics: t.metrics, Progress: j.Progress, LeaseOwner: j.LeaseOwner,
		LeaseUntil: microsPtr(j.LeaseUntil), Attempts: j.Attempts, StartedAt: microsPtr(j.StartedAt), FinishedAt: microsPtr(j.FinishedAt),
		EvID: ev.ID, EvRequestID: ev.RequestID, EvType: ev.Type, EvProduct: ev.Product, EvStatus: string(ev.Status), EvErrorCode: ev.ErrorCode,
		EvCharged: ev.Charged, EvReserved: ev.Reserved, EvWebhook: ev.Webhook, EvCreatedAt: micros(ev.CreatedAt)}
}

// qCloseJobs settles the jobs of $1 (a JSON array of closeRow) that are not settled yet, inserts
// an event for each of those, and answers their keys. The jobs are found by their ids as an
// array (an index scan), not by joining the rows: the planner takes a function's rows for a
// hundred and would otherwise scan a table of a few thousand jobs whole, the table of a service
// that has just started or of one whose statistics are old. (A plan the server made and kept
// for this prepared statement while the table was nearly empty scans it still, until the
// table's first ANALYZE: autovacuum's first pass, within a minute.)
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
   ON CONFLICT (account_id, id) DO NOTHING)
 SELECT account_id, id FROM u`

// close settles j with its event ev in the next batch statement and answers once that statement
// returned: nil, jobs.ErrSettled (the job was settled already), or the statement's error.
func (cl *closer) close(ctx context.Context, j jobs.Job, ev jobs.Event) error {
	r := &closeReq{ctx: ctx, job: j, ev: ev, done: make(chan error, 1)}
	cl.mu.Lock()
	cl.pending = append(cl.pending, r)
	if cl.running < closeRunners {
		cl.running++
		go cl.serve()
	}
	cl.mu.Unlock()
	// Once queued, the answer is awaited whatever the context: the job may be in a statement
	// that commits.
	return <-r.done
}

// serve writes batches until nothing waits.
func (cl *closer) serve() {
	for {
		runtime.Gosched() // let settlements about to queue join this batch (jobs/together.go)
		cl.mu.Lock()
		batch := cl.take()
		if len(batch) == 0 {
			cl.running--
			cl.mu.Unlock()
			return
		}
		cl.mu.Unlock()
		cl.write(batch)
	}
}

// take removes up to maxCloseBatch settlements from the queue, each job at most once. Under
// cl.mu.
func (cl *closer) take() []*closeReq {
	type key struct{ account, id string }
	seen := make(map[key]bool, len(cl.pending))
	var batch, rest []*closeReq
	for _, r := range cl.pending {
		k := key{r.job.AccountID, r.job.ID}
		if seen[k] || len(batch) == maxCloseBatch {
			rest = append(rest, r)
			continue
		}
		seen[k] = true
		batch = append(batch, r)
	}
	cl.pending = rest
	return batch
}

func (cl *closer) write(batch []*closeReq) {
	batch = wanted(batch)
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	if len(batch) == 1 {
		batch[0].done <- closeOne(ctx, cl.c, batch[0].job, batch[0].ev)
		return
	}
	rows := make([]closeRow, len(batch))
	for i, r := range batch {
		rows[i] = closeRowOf(r.job, r.ev)
	}
	doc, err := json.Marshal(rows)
	if err == nil {
		var took map[[2]string]bool
		if took, err = cl.run(ctx, doc, len(batch)); err == nil {
			for _, r := range batch {
				if took[[2]string{r.job.AccountID, r.job.ID}] {
					r.done <- nil
				} else {
					r.done <- jobs.ErrSettled
				}
			}
			return
		}
	}
	if retryable(err) {
		for _, r := range batch {
			r.done <- err // the caller's InOneStatement runs it again
		}
		return
	}
	// One row may be what failed: each is written on its own, and fails alone.
	for _, r := range batch {
		r.done <- closeOne(ctx, cl.c, r.job, r.ev)
	}
}

// wanted answers the settlements whose caller gave up while they waited and returns the others.
func wanted(batch []*closeReq) []*closeReq {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	return live
}

// batchContext bounds a batch's statement by the latest deadline among its callers (none when
// one of them has none). No caller's cancellation stops it: it carries the others' work.
func batchContext(batch []*closeReq) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, r := range batch {
		d, ok := r.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

func (cl *closer) run(ctx context.Context, doc []byte, n int) (map[[2]string]bool, error) {
	rows, err := cl.c.QueryContext(ctx, qCloseJobs, string(doc))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	took := make(map[[2]string]bool, n)
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, err
		}
		took[k] = true
	}
	return took, rows.Err()
}

func microsPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMicro()
	return &v
}
