package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
)

// Jobs is the jobs.Store view of a DB.
type Jobs struct{ *DB }

var (
	_ jobs.Store = Jobs{}
	_ jobs.Tx    = (*Tx)(nil)
)

// InTx runs fn in one transaction.
func (s Jobs) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	return s.DB.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}

func (s Jobs) InOneStatement(ctx context.Context, fn func(jobs.Tx) error) error {
	return s.DB.InOneStatement(ctx, func(tx *Tx) error { return fn(tx) })
}

const jobCols = `account_id, id, key_id, request_id, model, product, idem_key, input, status, outcome, error_code, error_detail,
 error_message, quoted, reserved, charged, coverage, priority, start_by, webhook, provider_job_id, dispatched, cancel_asked,
 result, logs, metrics, progress, lease_owner, lease_until, attempts, created_at, started_at, finished_at`

func jsonText(v any, empty bool) string {
	if empty {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// jobTexts are the job's structured fields as their columns hold them: JSON, or empty text for
// none.
type jobTexts struct{ errorDetail, coverage, result, logs, metrics string }

func textsOf(j jobs.Job) jobTexts {
	return jobTexts{errorDetail: errorDetailText(j), coverage: jsonText(j.Coverage, j.Coverage == nil),
		result: jsonText(j.Result, j.Result == nil), logs: jsonText(j.Logs, len(j.Logs) == 0), metrics: jsonText(j.Metrics, len(j.Metrics) == 0)}
}

// storedDetail is error_detail's form for a failure that carries fields (a refusal at a job's
// turn): an object. Any other failure's column holds its violations alone, a list, as rows
// written before the fields were kept do.
type storedDetail struct {
	Violations []runners.Violation `json:"violations,omitempty"`
	Fields     map[string]any      `json:"fields"`
}

// errorDetailText is j's error_detail column: its violations, with its error's fields if any.
func errorDetailText(j jobs.Job) string {
	if len(j.ErrorFields) == 0 {
		return jsonText(j.ErrorDetail, len(j.ErrorDetail) == 0)
	}
	return jsonText(storedDetail{Violations: j.ErrorDetail, Fields: j.ErrorFields}, false)
}

// scanErrorDetail reads an error_detail column (errorDetailText) into j.
func scanErrorDetail(text string, j *jobs.Job) {
	switch {
	case text == "":
	case text[0] == '{':
		var d storedDetail
		_ = json.Unmarshal([]byte(text), &d)
		j.ErrorDetail, j.ErrorFields = d.Violations, d.Fields
	default:
		_ = json.Unmarshal([]byte(text), &j.ErrorDetail)
	}
}

// storedKey is the idempotency key as a job's row keeps it: nothing for the key the service
// minted (jobs.MintedKey of the row's request id, which scanJob gives back), so that only the
// keys callers chose take an entry in the unique index of keys (jobs_idem_key, partial).
func storedKey(j jobs.Job) string {
	if j.IdempotencyKey == jobs.MintedKey(j.RequestID) {
		return ""
	}
	return j.IdempotencyKey
}

func jobArgs(j jobs.Job) []any {
	t := textsOf(j)
	return []any{j.AccountID, j.ID, j.KeyID, j.RequestID, j.Model, j.Product, storedKey(j), string(j.Input), string(j.Status),
		string(j.Outcome), j.ErrorCode, t.errorDetail, j.ErrorMessage, j.Quoted, j.Reserved, j.Charged,
		t.coverage, string(j.Priority), nullMicros(j.StartBy), j.Webhook, j.ProviderJobID, boolInt(j.Dispatched),
		boolInt(j.CancelAsked), t.result, t.logs, t.metrics,
		j.Progress, j.LeaseOwner, nullMicros(j.LeaseUntil), j.Attempts, micros(j.CreatedAt), nullMicros(j.StartedAt), nullMicros(j.FinishedAt)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func scanJob(row interface{ Scan(...any) error }) (jobs.Job, error) {
	var j jobs.Job
	var input, status, outcome, detail, coverage, priority, result, logs, metrics string
	var startBy, leaseUntil, startedAt, finishedAt sql.NullInt64
	var created int64
	var dispatched, cancelAsked int
	err := row.Scan(&j.AccountID, &j.ID, &j.KeyID, &j.RequestID, &j.Model, &j.Product, &j.IdempotencyKey, &input, &status, &outcome,
		&j.ErrorCode, &detail, &j.ErrorMessage, &j.Quoted, &j.Reserved, &j.Charged, &coverage, &priority, &startBy, &j.Webhook,
		&j.ProviderJobID, &dispatched, &cancelAsked, &result, &logs, &metrics, &j.Progress, &j.LeaseOwner, &leaseUntil, &j.Attempts,
		&created, &startedAt, &finishedAt)
	if err != nil {
		if isNoRows(err) {
			return j, jobs.ErrNotFound
		}
		return j, err
	}
	if j.IdempotencyKey == "" {
		j.IdempotencyKey = jobs.MintedKey(j.RequestID)
	}
	j.Input = json.RawMessage(input)
	j.Status, j.Outcome, j.Priority = jobs.QueueStatus(status), jobs.Outcome(outcome), jobs.Priority(priority)
	j.Dispatched, j.CancelAsked = dispatched == 1, cancelAsked == 1
	j.StartBy, j.LeaseUntil, j.StartedAt, j.FinishedAt = timePtr(startBy), timePtr(leaseUntil), timePtr(startedAt), timePtr(finishedAt)
	j.CreatedAt = fromMicros(created)
	scanErrorDetail(detail, &j)
	if coverage != "" {
		j.Coverage = &ledger.Coverage{}
		_ = json.Unmarshal([]byte(coverage), j.Coverage)
	}
	if result != "" {
		j.Result = &runners.Result{}
		_ = json.Unmarshal([]byte(result), j.Result)
	}
	if logs != "" {
		_ = json.Unmarshal([]byte(logs), &j.Logs)
	}
	if metrics != "" {
		_ = json.Unmarshal([]byte(metrics), &j.Metrics)
	}
	return j, nil
}

// jobColumns is the number of columns of jobCols (jobArgs answers one value for each).
const jobColumns = 33

// insertJobsSQL is the insert of n jobs in one statement; each n's text is made once (a
// statement prepared per connection is found by its text).
func insertJobsSQL(n int) string {
	if v, ok := insertJobsText.Load(n); ok {
		return v.(string)
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO jobs (` + jobCols + `) VALUES `)
	writeValues(&b, n, jobColumns)
	v, _ := insertJobsText.LoadOrStore(n, b.String())
	return v.(string)
}

var insertJobsText sync.Map

// qUpdateJob writes everything but the key (account_id, id) and the immutable columns; a
// settled job is never written again.
const qUpdateJob = `UPDATE jobs SET status = $1, outcome = $2, error_code = $3, error_detail = $4, error_message = $5,
 reserved = $6, charged = $7, coverage = $8, start_by = $9, provider_job_id = $10, dispatched = $11, cancel_asked = $12, result = $13,
 logs = $14, metrics = $15, progress = $16, lease_owner = $17, lease_until = $18, attempts = $19, started_at = $20, finished_at = $21
 WHERE account_id = $22 AND id = $23 AND status <> 'COMPLETED'`

func updateJobArgs(j jobs.Job) []any {
	a := jobArgs(j)
	return []any{a[8], a[9], a[10], a[11], a[12], a[14], a[15], a[16], a[18], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29],
		a[31], a[32], j.AccountID, j.ID}
}

// CloseJob writes the settled job and its outbox event. On PostgreSQL both are one statement
// (one round trip): the event is inserted only when the update took, and the count of updated
// rows says whether it did.
func (tx *Tx) CloseJob(ctx context.Context, j jobs.Job, ev *jobs.Event) error {
	if !tx.sql.closeOne || ev == nil {
		if err := tx.UpdateJob(ctx, j); err != nil {
			return err
		}
		if ev == nil {
			return nil
		}
		return tx.InsertEvent(ctx, *ev)
	}
	return closeOne(ctx, tx.q, j, *ev)
}

// closeOne is CloseJob on PostgreSQL for one job: its update and its event in one statement.
func closeOne(ctx context.Context, q Querier, j jobs.Job, ev jobs.Event) error {
	var n int
	err := q.QueryRowContext(ctx, `WITH u AS (`+qUpdateJob+` RETURNING 1),
 e AS (INSERT INTO events (account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at)
   SELECT $24::text, $25::text, $26::text, $27::text, $28::text, $29::text, $30::text, $31::text, $32::bigint, $33::bigint, $34::text, $35::bigint FROM u
   ON CONFLICT (account_id, id) DO NOTHING)
 SELECT count(*) FROM u`, append(updateJobArgs(j), ev.AccountID, ev.ID, ev.JobID, ev.RequestID, ev.Type, ev.Product, string(ev.Status), ev.ErrorCode,
		ev.Charged, ev.Reserved, ev.Webhook, micros(ev.CreatedAt))...).Scan(&n)
	if err != nil {
		return err
	}
	if n != 1 {
		return jobs.ErrSettled
	}
	return nil
}

func (tx *Tx) UpdateJob(ctx context.Context, j jobs.Job) error {
	res, err := tx.q.ExecContext(ctx, qUpdateJob, updateJobArgs(j)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return jobs.ErrSettled
}

func (tx *Tx) JobByRequestForUpdate(ctx context.Context, requestID string) (jobs.Job, error) {
	return scanJob(tx.q.QueryRowContext(ctx, qJobByRequest+tx.forUpdate(), requestID))
}

// ClaimQueued locks the head of model's queue, skipping jobs another transaction holds.
func (tx *Tx) ClaimQueued(ctx context.Context, model string) (jobs.Job, error) {
	return scanJob(tx.q.QueryRowContext(ctx, qClaimQueued+tx.sql.claimLock, model))
}

// qCountQueuedOf counts the jobs waiting for a slot of each model of a list ($1), as
// LedgerHold's statements read their lists: normal ones (any priority but low, as queueOrder
// ranks them) and low ones apart, each an index search of jobs_waiting (model, priority, …).
var qCountQueuedOf = map[Dialect]string{
	Postgres: `SELECT model, count(*) FILTER (WHERE priority <> 'low'), count(*) FILTER (WHERE priority = 'low')
 FROM jobs WHERE model = ANY($1::text[]) AND status = 'IN_QUEUE' AND dispatched = 1 GROUP BY model`,
	SQLite: `SELECT j.value,
 (SELECT count(*) FROM jobs WHERE model = j.value AND status = 'IN_QUEUE' AND dispatched = 1 AND priority <> 'low'),
 (SELECT count(*) FROM jobs WHERE model = j.value AND status = 'IN_QUEUE' AND dispatched = 1 AND priority = 'low')
 FROM json_each($1) j`,
}

// CountQueuedOf counts the jobs waiting for a slot of each model of slugs by priority, in one
// statement; the models of lock first take their hand-off locks (lockKeys) until the
// transaction ends. The locks are a statement of their own, sent with the count (WriteAtCommit):
// under READ COMMITTED a statement reads what was committed when it began, so a count in the
// statement that waited for a lock would miss the job its holder committed meanwhile.
func (tx *Tx) CountQueuedOf(ctx context.Context, slugs, lock []string) (map[string]jobs.Waiting, error) {
	if len(lock) > 0 && tx.sql.lockKeys != "" {
		keys := make([]string, len(lock))
		for i, m := range lock {
			keys[i] = "handoff:" + m
		}
		slices.Sort(keys) // every transaction takes them in one order: no deadlock between two
		if err := tx.q.WriteAtCommit(ctx, tx.sql.lockKeys, []any{tx.list(keys)}, nil); err != nil {
			return nil, err
		}
	}
	out := make(map[string]jobs.Waiting, len(slugs))
	err := eachRow(tx.q.QueryContext(ctx, qCountQueuedOf[tx.sql.name], tx.list(slugs)))(func(row Row) error {
		var v string
		var w jobs.Waiting
		err := row.Scan(&v, &w.Normal, &w.Low)
		out[v] = w
		return err
	})
	return out, err
}

// InsertJobs stores js in one statement: in a pipelined transaction
// (PostgreSQL) it goes with the transaction's next statement or its COMMIT, whose failure is
// then every job's (ErrDuplicate, or an error wrapping ErrNotRecorded).
func (tx *Tx) InsertJobs(ctx context.Context, js []jobs.Job) error {
	if len(js) == 0 {
		return nil
	}
	args := make([]any, 0, len(js)*jobColumns)
	for _, j := range js {
		args = append(args, jobArgs(j)...)
	}
	return tx.q.WriteAtCommit(ctx, insertJobsSQL(len(js)), args, func(err error) error {
		if isUniqueViolation(err) {
			return jobs.ErrDuplicate
		}
		return fmt.Errorf("%w: %w", jobs.ErrNotRecorded, err)
	})
}

// CountWaiting counts the jobs waiting for a slot, every model together (one read of the
// waiting jobs' partial index, outside any write transaction).
func (s Jobs) CountWaiting(ctx context.Context) (int, error) {
	var n int
	err := s.sql.QueryRowContext(ctx, qCountWaiting).Scan(&n)
	return n, err
}

func (tx *Tx) InsertEvent(ctx context.Context, e jobs.Event) error {
	_, err := tx.q.ExecContext(ctx, `INSERT INTO events (account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (account_id, id) DO NOTHING`,
		e.AccountID, e.ID, e.JobID, e.RequestID, e.Type, e.Product, string(e.Status), e.ErrorCode, e.Charged, e.Reserved, e.Webhook, micros(e.CreatedAt))
	return err
}

func (s Jobs) JobByRequest(ctx context.Context, requestID string) (jobs.Job, error) {
	return scanJob(s.sql.QueryRowContext(ctx, qJobByRequest, requestID))
}

func (s Jobs) Job(ctx context.Context, accountID, id string) (jobs.Job, error) {
	return scanJob(s.sql.QueryRowContext(ctx, qJob, accountID, id))
}

// JobByIdempotencyKey reads the account's job submitted under key, whatever its product: a
// key the caller chose from the index of keys (which holds only those), a key the service
// minted (jobs.MintedKey) by the request id it was minted from.
func (s Jobs) JobByIdempotencyKey(ctx context.Context, accountID, key string) (jobs.Job, error) {
	j, err := scanJob(s.sql.QueryRowContext(ctx, qJobByIdempotencyKey, accountID, key))
	requestID, mintable := jobs.MintedRequestID(key)
	if !errors.Is(err, jobs.ErrNotFound) || !mintable {
		return j, err
	}
	j, err = s.JobByRequest(ctx, requestID)
	if err == nil && (j.AccountID != accountID || j.IdempotencyKey != key) {
		return jobs.Job{}, jobs.ErrNotFound
	}
	return j, err
}

func (s Jobs) list(ctx context.Context, q string, args ...any) ([]jobs.Job, error) {
	rows, err := s.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []jobs.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

func (s Jobs) ListJobs(ctx context.Context, accountID string, before time.Time, limit int) ([]jobs.Job, error) {
	return s.list(ctx, qListJobs[s.d.name], accountID, micros(before), limit)
}

func (s Jobs) Queued(ctx context.Context, model string, limit int) ([]jobs.Job, error) {
	return s.list(ctx, qQueued,
		model, limit)
}

func (s Jobs) Stale(ctx context.Context, now time.Time, limit int) ([]jobs.Job, error) {
	return s.list(ctx, qStale, micros(now), limit)
}

func (s Jobs) Overdue(ctx context.Context, now time.Time, limit int) ([]jobs.Job, error) {
	return s.list(ctx, qOverdue, micros(now), limit)
}

func (s Jobs) QueuePosition(ctx context.Context, j jobs.Job) (int, error) {
	var n int
	err := s.sql.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE model = $1 AND status = 'IN_QUEUE' AND request_id <> $2 AND
 ((CASE WHEN priority = 'low' THEN 1 ELSE 0 END) < $3 OR ((CASE WHEN priority = 'low' THEN 1 ELSE 0 END) = $3 AND (created_at < $4 OR (created_at = $4 AND request_id < $2))))`,
		j.Model, j.RequestID, boolInt(j.Priority == jobs.Low), micros(j.CreatedAt)).Scan(&n)
	return n, err
}

func (s Jobs) Heartbeat(ctx context.Context, owner string, requestIDs []string, until time.Time) ([]string, error) {
	var cancel []string
	for _, id := range requestIDs {
		var asked int
		err := s.sql.QueryRowContext(ctx, `UPDATE jobs SET lease_until = $1 WHERE request_id = $2 AND lease_owner = $3 AND status = 'IN_PROGRESS' RETURNING cancel_asked`,
			micros(until), id, owner).Scan(&asked)
		if isNoRows(err) {
			continue
		}
		if err != nil {
			return cancel, err
		}
		if asked == 1 {
			cancel = append(cancel, id)
		}
	}
	return cancel, nil
}

func (s Jobs) AppendProgress(ctx context.Context, requestID string, logs []jobs.LogLine, progress float64) error {
	_, err := s.sql.ExecContext(ctx, `UPDATE jobs SET logs = $1, progress = $2 WHERE request_id = $3 AND status = 'IN_PROGRESS'`,
		jsonText(logs, len(logs) == 0), progress, requestID)
	return err
}

// writeValues writes the VALUES list of rows rows of cols parameters each, numbered from $1:
// ($1, $2), ($3, $4) ….
func writeValues(b *strings.Builder, rows, cols int) {
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteString("$" + itoa(r*cols+c+1))
		}
		b.WriteByte(')')
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
