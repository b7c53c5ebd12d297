package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
)

// summaryCols are what a job list shows: no input, result, logs or metrics, which may be large.
const summaryCols = `account_id, id, key_id, request_id, model, product, status, outcome, error_code, quoted, reserved, charged,
 coverage, priority, created_at, started_at, finished_at`

// searchJobsSQL builds the page read of a search. Each filter is an equality on a leading
// column of one index whose last columns are (created_at, id), so the page is read in index
// order and stops at its limit: a model filter reads jobs_account_model; a state filter reads
// jobs_account_open while unsettled (queued or running, the few jobs in flight) and
// jobs_account_done by outcome once settled, each a partial index whose condition the query
// repeats; no filter reads every state's index and merges them (newestSQL). SQLite's planner,
// without statistics, is told which (INDEXED BY).
func searchJobsSQL(d Dialect, accountID string, q jobs.Search) (string, []any) {
	args := []any{accountID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var cond strings.Builder // " AND …" after account_id = $1
	index := ""
	if q.Model != "" {
		cond.WriteString(" AND model = " + arg(q.Model))
		index = "jobs_account_model"
	}
	if st, out, ok := q.State.Columns(); ok {
		cond.WriteString(" AND outcome = " + arg(string(out)) + " AND status = " + arg(string(st)))
		if st == jobs.Completed {
			cond.WriteString(" AND status = 'COMPLETED'")
		} else {
			cond.WriteString(" AND status <> 'COMPLETED'")
		}
		if q.Model == "" {
			index = "jobs_account_done"
			if st != jobs.Completed {
				index = "jobs_account_open"
			}
		}
	}
	if !q.From.IsZero() {
		cond.WriteString(" AND created_at >= " + arg(micros(q.From)))
	}
	if !q.To.IsZero() {
		cond.WriteString(" AND created_at < " + arg(micros(q.To)))
	}
	if q.After != nil {
		c := arg(micros(q.After.CreatedAt))
		cond.WriteString(" AND created_at <= " + c + " AND (created_at < " + c + " OR id < " + arg(q.After.ID) + ")")
	}
	limit := arg(q.Limit)
	if index == "" {
		return newestSQL(d, summaryCols, cond.String(), limit), args
	}
	return `SELECT ` + summaryCols + ` FROM jobs` + dialects[d].index(index) + ` WHERE account_id = $1` + cond.String() + ` ORDER BY created_at DESC, id DESC LIMIT ` + limit, args
}

// newestSQL reads an account's ($1) newest jobs of every state, cond (conditions on created_at
// and id, each starting with " AND ") narrowing them: one read per state through the index a
// filter on that state reads (the unsettled jobs, then the settled ones by outcome), each in
// index order and stopped at limit, merged and cut at limit. No index of every job of an
// account is kept: each such index cost every submit a page write, while a job list is read
// far less often than jobs are made.
func newestSQL(d Dialect, cols, cond, limit string) string {
	arms := []struct{ index, state string }{{"jobs_account_open", "status <> 'COMPLETED'"}}
	for _, st := range jobs.States {
		if status, outcome, _ := st.Columns(); status == jobs.Completed {
			arms = append(arms, struct{ index, state string }{"jobs_account_done", "outcome = '" + string(outcome) + "' AND status = 'COMPLETED'"})
		}
	}
	var b strings.Builder
	for i, a := range arms {
		if i > 0 {
			b.WriteString("\n UNION ALL ")
		}
		b.WriteString("SELECT * FROM (SELECT " + cols + " FROM jobs" + dialects[d].index(a.index) + " WHERE account_id = $1 AND " + a.state + cond +
			" ORDER BY created_at DESC, id DESC LIMIT " + limit + ") s" + strconv.Itoa(i))
	}
	b.WriteString("\n ORDER BY created_at DESC, id DESC LIMIT " + limit)
	return b.String()
}

// SearchJobs reads a page of an account's jobs narrowed by q, newest first.
func (s Jobs) SearchJobs(ctx context.Context, accountID string, q jobs.Search) ([]jobs.Job, error) {
	query, args := searchJobsSQL(s.d.name, accountID, q)
	rows, err := s.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []jobs.Job
	for rows.Next() {
		var j jobs.Job
		var status, outcome, coverage, priority string
		var created int64
		var startedAt, finishedAt sql.NullInt64
		if err := rows.Scan(&j.AccountID, &j.ID, &j.KeyID, &j.RequestID, &j.Model, &j.Product, &status, &outcome, &j.ErrorCode,
			&j.Quoted, &j.Reserved, &j.Charged, &coverage, &priority, &created, &startedAt, &finishedAt); err != nil {
			return nil, err
		}
		j.Status, j.Outcome, j.Priority = jobs.QueueStatus(status), jobs.Outcome(outcome), jobs.Priority(priority)
		j.CreatedAt, j.StartedAt, j.FinishedAt = fromMicros(created), timePtr(startedAt), timePtr(finishedAt)
		if coverage != "" {
			j.Coverage = &ledger.Coverage{}
			_ = json.Unmarshal([]byte(coverage), j.Coverage)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
