package sqlstore

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
)

// The hot queries: what a submit, a settlement, the sweep and a usage read run. Each must read
// through an index, so its cost follows the rows it answers, not the table's history; the store
// suite checks their plans on both databases (Explain).
const (
	qJobByRequest = `SELECT ` + jobCols + ` FROM jobs WHERE request_id = $1`
	// The key's condition repeats the predicate of the partial index of keys (jobs_idem_key), so
	// that a plan made for any $2 may use it.
	qJobByIdempotencyKey = `SELECT ` + jobCols + ` FROM jobs WHERE account_id = $1 AND idem_key = $2 AND idem_key <> ''`
	qJob                 = `SELECT ` + jobCols + ` FROM jobs WHERE account_id = $1 AND id = $2`
	// queueOrder is the order of a model's queue: normal before low, oldest first.
	queueOrder   = ` ORDER BY CASE WHEN priority = 'low' THEN 1 ELSE 0 END, created_at, request_id`
	qClaimQueued = `SELECT ` + jobCols + ` FROM jobs WHERE model = $1 AND status = 'IN_QUEUE'` + queueOrder + ` LIMIT 1`
	qQueued      = `SELECT ` + jobCols + ` FROM jobs WHERE model = $1 AND status = 'IN_QUEUE'` + queueOrder + ` LIMIT $2`

	qCountWaiting = `SELECT count(*) FROM jobs WHERE status = 'IN_QUEUE' AND dispatched = 1`
	qStale        = `SELECT ` + jobCols + ` FROM jobs WHERE status = 'IN_PROGRESS' AND lease_until < $1 ORDER BY lease_until LIMIT $2`
	qOverdue      = `SELECT ` + jobCols + ` FROM jobs WHERE status = 'IN_QUEUE' AND start_by IS NOT NULL AND start_by < $1 ORDER BY start_by LIMIT $2`
	// qUsage and qUsagePerModel sum one window of an account's spend per key and per model: its
	// whole UTC months [$3, $4) from usage_monthly, its part-month edges [$2, $3) and [$4, $5)
	// from usage_daily, each one range of a primary key. A window of whole months (every window
	// the routes serve) reads at most a row per month, key and model, and two empty ranges.
	qUsage = `SELECT key_id, CAST(SUM(charged) AS BIGINT), CAST(SUM(refunded) AS BIGINT), CAST(SUM(jobs) AS BIGINT) FROM (` + usageWindowRows + `) u
 GROUP BY key_id ORDER BY key_id`
	qUsagePerModel = `SELECT model, CAST(SUM(jobs) AS BIGINT), CAST(SUM(charged) AS BIGINT), CAST(SUM(refunded) AS BIGINT) FROM (` + usageWindowRows + `) u
 GROUP BY model ORDER BY model`
	usageWindowRows = `SELECT key_id, model, charged, refunded, jobs FROM usage_monthly WHERE account_id = $1 AND month >= $3 AND month < $4
 UNION ALL SELECT key_id, model, charged, refunded, jobs FROM usage_daily WHERE account_id = $1 AND day >= $2 AND day < $3
 UNION ALL SELECT key_id, model, charged, refunded, jobs FROM usage_daily WHERE account_id = $1 AND day >= $4 AND day < $5`
	// qUsagePerDay is the usage page's chart: one range of usage_daily_totals, a row per UTC day
	// of the window with spend, every key and model already summed.
	qUsagePerDay = `SELECT day, jobs, charged, refunded FROM usage_daily_totals WHERE account_id = $1 AND day >= $2 AND day < $3 ORDER BY day`
	// qUsageDayCount and qUsageDays read one range of usage_daily's primary key (account_id, day,
	// key_id, model), in its order: no sort, and a bounded read. A page of qUsageDays resumes
	// after the row ($2, $4, $5) that ended the one before: the index range starts at that day
	// (a row-value comparison is not used as an index bound by every planner).
	qUsageDayCount = `SELECT count(*) FROM usage_daily WHERE account_id = $1 AND day >= $2 AND day < $3`
	qUsageDays     = `SELECT day, key_id, model, jobs, charged, refunded FROM usage_daily
 WHERE account_id = $1 AND day >= $2 AND day < $3 AND (day > $2 OR key_id > $4 OR (key_id = $4 AND model > $5))
 ORDER BY day, key_id, model LIMIT $6`
	// qUsageLineCount counts an account's charge and refund entries in a window through
	// ledger_entries_key (key_id, created_at), one range per key of the account (its keys
	// through api_keys_account). The account is named through its keys only: entries have no
	// index led by the account (each would cost every charge a page write of its own). Every
	// charge and refund carries the key that caused it.
	qUsageLineCount = `SELECT count(*) FROM ledger_entries
 WHERE key_id IN (SELECT id FROM api_keys WHERE account_id = $1) AND created_at >= $2 AND created_at < $3 AND kind IN ('charge', 'refund')`
	qUsageKeys = `SELECT id FROM api_keys WHERE account_id = $1 ORDER BY id`
	// qUsageLines is a page of one key's entries in a window: one range of ledger_entries_key
	// from the entry ($2, $4) that ended the page before, each with its job's model.
	qUsageLines = `SELECT e.id, e.created_at, e.key_id, COALESCE(j.model, ''), e.job_id, e.kind, e.amount
 FROM ledger_entries e LEFT JOIN jobs j ON j.account_id = e.account_id AND j.id = e.job_id
 WHERE e.key_id = $1 AND e.created_at >= $2 AND e.created_at < $3 AND (e.created_at > $2 OR e.id > $4) AND e.kind IN ('charge', 'refund')
 ORDER BY e.created_at, e.id LIMIT $5`
	qAccount = `SELECT ` + accountCols + ` FROM accounts WHERE id = $1`
	qKey     = `SELECT ` + keyCols + ` FROM api_keys WHERE id = $1`
)

// qRecentDeliveries is the console's read of an endpoint's latest deliveries.
const qRecentDeliveries = `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`

// qListJobs is the API's job list per dialect: an account's ($1) jobs created before $2,
// newest first, $3 of them, every state's index merged (newestSQL).
var qListJobs = map[Dialect]string{
	SQLite:   newestSQL(SQLite, jobCols, " AND created_at < $2", "$3"),
	Postgres: newestSQL(Postgres, jobCols, " AND created_at < $2", "$3"),
}

// hot names each hot query with sample arguments.
var hot = map[string]struct {
	sql  string
	args []any
}{
	"together: charges":          {qChargeAll, []any{[]string{"a"}, []string{"k"}, []string{"j"}, []string{"m"}, []int64{-1}, []int64{0}, "2026-11", int64(0), int64(0), int64(0)}},
	"submit: account":            {qAccount, []any{"acct"}},
	"submit: key":                {qKey, []any{"key"}},
	"metrics: queue depth":       {qCountWaiting, nil},
	"submit: idempotency read":   {qJobByIdempotencyKey, []any{"acct", "k"}},
	"settle: job by request":     {qJobByRequest, []any{"req"}},
	"settle: job update":         {qUpdateJob, append(make([]any, 21), "acct", "id")},
	"settle: refund spend":       {qRefundSpend, []any{int64(1), "key", int64(0), "job"}},
	"read: job by id":            {qJob, []any{"acct", "id"}},
	"claim: head of the queue":   {qClaimQueued, []any{"model"}},
	"sweep: queued":              {qQueued, []any{"model", 1}},
	"sweep: stale leases":        {qStale, []any{int64(0), 50}},
	"sweep: overdue queued jobs": {qOverdue, []any{int64(0), 100}},
	"read: list jobs":            {"", []any{"acct", int64(0), 20}},
	"usage: window":              {qUsage, []any{"acct", int64(0), int64(1), int64(2), int64(3)}},
	"usage: per day":             {qUsagePerDay, []any{"acct", int64(0), int64(1)}},
	"usage: per model":           {qUsagePerModel, []any{"acct", int64(0), int64(1), int64(2), int64(3)}},
	"usage: export count":        {qUsageDayCount, []any{"acct", int64(0), int64(1)}},
	"usage: export rows":         {qUsageDays, []any{"acct", int64(0), int64(1), "", "", 1000}},
	"usage: export lines count":  {qUsageLineCount, []any{"acct", int64(0), int64(1)}},
	"usage: export keys":         {qUsageKeys, []any{"acct"}},
	"usage: export lines":        {qUsageLines, []any{"key", int64(0), int64(1), int64(0), 1000}},
	"console: recent deliveries": {qRecentDeliveries, []any{"wh", 20}},
	"relay: pending events":      {qPendingEvents, []any{100}},
	"console: accounts page":     {qAccountsPage, []any{int64(1 << 62), "acct", 50}},
}

// hotSearches are the console's job list reads, one per kind of filter, built per dialect.
var hotSearches = map[string]jobs.Search{
	"console: jobs page":                  {Limit: 51},
	"console: jobs page after a cursor":   {After: &jobs.Cursor{CreatedAt: time.Unix(1, 0), ID: "x"}, Limit: 51},
	"console: jobs of a model":            {Model: "m", From: time.Unix(1, 0), To: time.Unix(2, 0), Limit: 51},
	"console: jobs in a state":            {State: jobs.StateFailed, After: &jobs.Cursor{CreatedAt: time.Unix(1, 0), ID: "x"}, Limit: 51},
	"console: jobs running":               {State: jobs.StateRunning, Limit: 51},
	"console: jobs of a model in a state": {Model: "m", State: jobs.StateQueued, Limit: 51},
}

// hotHeld are the hold's reads (LedgerHold), each database's own, of a list of ids.
var hotHeld = map[string]map[Dialect]string{"hold: locks": qHoldLock, "hold: keys and in-flight": qHoldKeys,
	"submit: queue lengths": qCountQueuedOf}

// hotOnly names the hot queries of one dialect alone (submits together, PostgreSQL).
var hotOnly = map[string]Dialect{"together: charges": Postgres}

// HotQueries lists the names Explain accepts on a database of dialect d.
func HotQueries(d Dialect) []string {
	out := make([]string, 0, len(hot)+len(hotSearches)+len(hotHeld))
	for name, q := range hotHeld {
		if q[d] != "" {
			out = append(out, name)
		}
	}
	for name := range hot {
		if only, ok := hotOnly[name]; !ok || only == d {
			out = append(out, name)
		}
	}
	for name := range hotSearches {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Explain answers the plan of a hot query, one line per plan node, as the store's Conn gives it
// (on PostgreSQL with sequential scans priced out, so a plan that still scans a table has no
// index it could use).
func (db *DB) Explain(ctx context.Context, name string) ([]string, error) {
	h, ok := hot[name]
	if search, isSearch := hotSearches[name]; isSearch {
		h.sql, h.args = searchJobsSQL(db.d.name, "acct", search)
		ok = true
	}
	if q, held := hotHeld[name]; held && q[db.d.name] != "" {
		h.sql, h.args, ok = q[db.d.name], []any{db.d.list([]string{"a", "b"})}, true
	}
	if only, one := hotOnly[name]; !ok || (one && only != db.d.name) {
		return nil, fmt.Errorf("sqlstore: no hot query %q on %s", name, db.d.name)
	}
	q := h.sql
	if name == "read: list jobs" {
		q = qListJobs[db.d.name]
	}
	return db.sql.Explain(ctx, q, h.args...)
}
