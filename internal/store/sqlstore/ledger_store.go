package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// This file is the ledger's store adapter: the only Go code that writes balances, ledger
// entries, the usage rollup, key spend or passes (an architecture test keeps it so). Everything
// else moves credits through ledger.Service.

var (
	_ ledger.Store = (*DB)(nil)
	_ ledger.Tx    = (*Tx)(nil)
)

const dayMicros = int64(24 * time.Hour / time.Microsecond)

// monthMicros is the start of t's UTC calendar month in the rollups' unit (microseconds since
// the epoch).
func monthMicros(t time.Time) int64 {
	t = t.UTC()
	return micros(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC))
}

// LedgerTx runs fn in one transaction.
func (db *DB) LedgerTx(ctx context.Context, fn func(ledger.Tx) error) error {
	return db.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}

// LedgerAccount reads one account.
func (db *DB) LedgerAccount(ctx context.Context, id string) (auth.Account, error) {
	return db.Account(ctx, id)
}

// LedgerBalanceSum returns the sum of an account's ledger entries.
func (db *DB) LedgerBalanceSum(ctx context.Context, accountID string) (int64, error) {
	var sum sql.NullInt64
	err := db.sql.QueryRowContext(ctx, `SELECT sum(amount) FROM ledger_entries WHERE account_id = $1`, accountID).Scan(&sum)
	return sum.Int64, err
}

// LedgerDueAllowances lists accounts whose allowance for period is still to be credited.
func (db *DB) LedgerDueAllowances(ctx context.Context, period string, limit int) ([]string, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id FROM accounts WHERE monthly_allowance > 0 AND status <> $1 AND allowance_period < $2 ORDER BY id LIMIT $3`,
		string(auth.Banned), period, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// LedgerLockAccount reads the account and holds its row for the rest of the transaction.
func (tx *Tx) LedgerLockAccount(ctx context.Context, id string) (auth.Account, error) {
	return tx.accountForUpdate(ctx, id)
}

// LedgerStanding reads an account and one of its keys in one statement.
func (db *DB) LedgerStanding(ctx context.Context, accountID, keyID string) (auth.Account, auth.KeyRecord, error) {
	return scanAccountKey(db.sql.QueryRowContext(ctx, qAccountKey, accountID, keyID))
}

// LedgerApply moves the balance and records the entry, counts charges and refunds in the
// usage rollups (per day, key and model; per month, key and model; per day) and adds a charge
// to its key's spend for the entry's period, all in the caller's transaction and in one
// statement (qLedgerApply): the balance always equals the sum of entries, and each rollup the
// sum of charges and refunds.
func (tx *Tx) LedgerApply(ctx context.Context, e ledger.Entry, floor int64) (int64, error) {
	charged, refunded, jobs, counted := rollupOf(e)
	args := []any{e.AccountID, e.KeyID, e.JobID, e.Model, string(e.Kind), int64(e.Amount), auth.Period(e.At), micros(e.At), floor,
		micros(e.At) / dayMicros * dayMicros, charged, refunded, jobs, counted, monthMicros(e.At)}
	var bal int64
	err := tx.q.QueryRowContext(ctx, qLedgerApply[tx.sql.name], args[:tx.sql.ledgerArgs]...).Scan(&bal)
	if isNoRows(err) {
		return 0, tx.refused(ctx, e.AccountID, floor)
	}
	return bal, err
}

// refused says why a guarded movement changed nothing: no such account, or a balance below
// the floor.
func (tx *Tx) refused(ctx context.Context, accountID string, floor int64) error {
	if floor == math.MinInt64 {
		return ledger.ErrNotFound
	}
	if _, err := tx.accountForUpdate(ctx, accountID); err != nil {
		return err
	}
	return ledger.ErrInsufficient
}

// rollupOf is what an entry adds to the usage rollup: charges and refunds count, grants and
// allowances do not.
func rollupOf(e ledger.Entry) (charged, refunded, jobs int64, counted bool) {
	switch e.Kind {
	case ledger.Charge:
		return -int64(e.Amount), 0, 1, true
	case ledger.Refund:
		return 0, int64(e.Amount), 0, true
	}
	return 0, 0, 0, false
}

// qLedgerApply is LedgerApply's statement on each database, of ledgerArgs' parameters: $1
// account, $2 key, $3 job, $4 model, $5 kind, $6 amount, $7 period, $8 at, $9 floor (SQLite's
// nine); $10 day, $11-$13 rollup charged, refunded, jobs, $14 whether the rollups count it,
// $15 month. On SQLite the statement inserts the entry with the balance it leaves, guarded by
// the floor, and the trigger ledger_entries_apply (migration 00135) moves the balance, the
// rollups and a charge's key spend with it. On PostgreSQL the guarded balance update (b), and
// the entry, the rollups and a charge's key spend written only when it took a row (e; u per
// day, key and model; m per month, key and model; d per day; k the key) are data-modifying
// parts of one statement.
var qLedgerApply = map[Dialect]string{
	SQLite: `INSERT INTO ledger_entries (account_id, key_id, job_id, model, kind, amount, balance, period, created_at)
 SELECT id, $2, $3, $4, $5, $6, balance + $6, $7, $8 FROM accounts WHERE id = $1 AND balance + $6 >= $9 RETURNING balance`,
	Postgres: oneTripBalance + oneTripEntry + `,
 k AS (
   UPDATE api_keys SET spent = CASE WHEN spent_period = $7::text THEN spent - $6::bigint ELSE -$6::bigint END, spent_period = $7::text
   WHERE id = $2::text AND $5::text = 'charge' AND EXISTS (SELECT 1 FROM b))
 SELECT balance FROM b`,
}

const (
	oneTripBalance = `WITH b AS (
   UPDATE accounts SET balance = balance + $6::bigint WHERE id = $1::text AND balance + $6::bigint >= $9::bigint RETURNING balance),`
	oneTripEntry = `
 e AS (
   INSERT INTO ledger_entries (account_id, key_id, job_id, model, kind, amount, balance, period, created_at)
   SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint, b.balance, $7::text, $8::bigint FROM b),
 u AS (
   INSERT INTO usage_daily (account_id, day, key_id, model, charged, refunded, jobs)
   SELECT $1::text, $10::bigint, $2::text, $4::text, $11::bigint, $12::bigint, $13::bigint FROM b WHERE $14::boolean
   ON CONFLICT (account_id, day, key_id, model) DO UPDATE SET charged = usage_daily.charged + excluded.charged,
   refunded = usage_daily.refunded + excluded.refunded, jobs = usage_daily.jobs + excluded.jobs),
 m AS (
   INSERT INTO usage_monthly (account_id, month, key_id, model, charged, refunded, jobs)
   SELECT $1::text, $15::bigint, $2::text, $4::text, $11::bigint, $12::bigint, $13::bigint FROM b WHERE $14::boolean
   ON CONFLICT (account_id, month, key_id, model) DO UPDATE SET charged = usage_monthly.charged + excluded.charged,
   refunded = usage_monthly.refunded + excluded.refunded, jobs = usage_monthly.jobs + excluded.jobs),
 d AS (
   INSERT INTO usage_daily_totals (account_id, day, charged, refunded, jobs)
   SELECT $1::text, $10::bigint, $11::bigint, $12::bigint, $13::bigint FROM b WHERE $14::boolean
   ON CONFLICT (account_id, day) DO UPDATE SET charged = usage_daily_totals.charged + excluded.charged,
   refunded = usage_daily_totals.refunded + excluded.refunded, jobs = usage_daily_totals.jobs + excluded.jobs)`
)

// The hold's reads (LedgerHold), each database's, of lists of ids ($1): the accounts' locks
// (PostgreSQL; on SQLite the transaction's write lock holds every row already), then the keys
// with their accounts and each account's jobs in flight, in one statement. On PostgreSQL the
// keys are read after the accounts' locks are held, so that they are read as the accounts'
// last holder left them (every writer of a key's spend holds its account); they are locked
// too, in order, as the charges' statement will write them, so that nothing else writing keys
// in the same order (TouchKeys) can wait on this transaction in a cycle. SQLite walks the list
// and looks each id up (a condition "IN (the list)" would build a temporary index of it
// first).
var (
	qHoldLock = map[Dialect]string{
		Postgres: `SELECT id FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
	}
	qHoldKeys = map[Dialect]string{
		Postgres: `SELECT ` + prefixed("a.", accountCols) + `, ` + prefixed("k.", keyCols) +
			`, (SELECT count(*) FROM jobs WHERE account_id = a.id AND status <> 'COMPLETED')` +
			` FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ANY($1::text[]) ORDER BY k.id FOR UPDATE OF k`,
		SQLite: `SELECT ` + prefixed("a.", accountCols) + `, ` + prefixed("k.", keyCols) +
			`, (SELECT count(*) FROM jobs INDEXED BY jobs_account_open WHERE account_id = a.id AND status <> 'COMPLETED')` +
			` FROM json_each($1) j JOIN api_keys k ON k.id = j.value JOIN accounts a ON a.id = k.account_id`,
	}
)

// LedgerHold locks the accounts of pairs and reads them with the keys named and their jobs in
// flight: on PostgreSQL the lock and the read are sent together (one round trip), each a
// statement of its own, so the read sees what the lock's last holder committed.
func (tx *Tx) LedgerHold(ctx context.Context, pairs []ledger.AccountKey) (ledger.HeldRows, error) {
	accountIDs, keyIDs := make([]string, 0, len(pairs)), make([]string, 0, len(pairs))
	for _, p := range pairs {
		if n := len(accountIDs); n == 0 || accountIDs[n-1] != p.AccountID {
			accountIDs = append(accountIDs, p.AccountID)
		}
		keyIDs = append(keyIDs, p.KeyID)
	}
	slices.Sort(keyIDs)
	keyIDs = slices.Compact(keyIDs)
	type held struct {
		a auth.Account
		k auth.KeyRecord
	}
	keys := map[string]held{}
	out := ledger.HeldRows{InFlight: map[string]int{}}
	var reads []Read
	var each []func(Row) error
	if q := qHoldLock[tx.sql.name]; q != "" {
		reads, each = append(reads, NewRead(q, tx.list(accountIDs))), append(each, func(row Row) error { return row.Scan(new(string)) })
	}
	reads = append(reads, NewRead(qHoldKeys[tx.sql.name], tx.list(keyIDs)))
	each = append(each, func(row Row) error {
		var n int
		a, k, err := scanAccountKey(row, &n)
		keys[k.ID], out.InFlight[a.ID] = held{a, k}, n
		return err
	})
	if err := tx.q.ReadAll(ctx, reads, func(i int, row Row) error { return each[i](row) }); err != nil {
		return ledger.HeldRows{}, err
	}
	for _, p := range pairs {
		if h, ok := keys[p.KeyID]; ok && h.a.ID == p.AccountID {
			out.Accounts, out.Keys = append(out.Accounts, h.a), append(out.Keys, h.k)
		}
	}
	return out, nil
}

// eachRow calls fn on each row of a query's answer, then closes it (once: closing a batch's
// rows reads what the batch carried after them).
func eachRow(rows Rows, err error) func(fn func(Row) error) error {
	return func(fn func(Row) error) error {
		if err != nil {
			return err
		}
		for rows.Next() {
			if err = fn(rows); err != nil {
				break
			}
		}
		if err == nil {
			err = rows.Err()
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

// qChargeAll writes charges made together (PostgreSQL), from one array per column ($1 account,
// $2 key, $3 job, $4 model, $5 amount, $6 the balance each leaves), all at one time ($7
// period, $8 at, $9 day, $10 month): each account's balance and each key's spend move by their
// sums, the rollups by theirs, and the entries are written in the order given.
const qChargeAll = `WITH v AS (
   SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[]) WITH ORDINALITY
   AS v(account_id, key_id, job_id, model, amount, balance, ord)),
 b AS (
   UPDATE accounts a SET balance = a.balance + s.total FROM (SELECT account_id, sum(amount) AS total FROM v GROUP BY account_id) s
   WHERE a.id = s.account_id),
 k AS (
   UPDATE api_keys k SET spent = CASE WHEN k.spent_period = $7::text THEN k.spent + s.spend ELSE s.spend END, spent_period = $7::text
   FROM (SELECT key_id, -sum(amount) AS spend FROM v GROUP BY key_id) s WHERE k.id = s.key_id),
 u AS (
   INSERT INTO usage_daily (account_id, day, key_id, model, charged, refunded, jobs)
   SELECT account_id, $9::bigint, key_id, model, -sum(amount), 0, count(*) FROM v GROUP BY account_id, key_id, model
   ON CONFLICT (account_id, day, key_id, model) DO UPDATE SET charged = usage_daily.charged + excluded.charged,
   jobs = usage_daily.jobs + excluded.jobs),
 m AS (
   INSERT INTO usage_monthly (account_id, month, key_id, model, charged, refunded, jobs)
   SELECT account_id, $10::bigint, key_id, model, -sum(amount), 0, count(*) FROM v GROUP BY account_id, key_id, model
   ON CONFLICT (account_id, month, key_id, model) DO UPDATE SET charged = usage_monthly.charged + excluded.charged,
   jobs = usage_monthly.jobs + excluded.jobs),
 d AS (
   INSERT INTO usage_daily_totals (account_id, day, charged, refunded, jobs)
   SELECT account_id, $9::bigint, -sum(amount), 0, count(*) FROM v GROUP BY account_id
   ON CONFLICT (account_id, day) DO UPDATE SET charged = usage_daily_totals.charged + excluded.charged,
   jobs = usage_daily_totals.jobs + excluded.jobs)
INSERT INTO ledger_entries (account_id, key_id, job_id, model, kind, amount, balance, period, created_at)
 SELECT account_id, key_id, job_id, model, 'charge', amount, balance, $7::text, $8::bigint FROM v ORDER BY ord`

// LedgerChargeAll writes charges taken together. On PostgreSQL it is one statement, which goes
// with the transaction's next one or its COMMIT; on SQLite each is LedgerApply's (which raises
// the key's spend too).
func (tx *Tx) LedgerChargeAll(ctx context.Context, cs []ledger.Taken) error {
	if len(cs) == 0 {
		return nil
	}
	at := cs[0].At
	for _, c := range cs {
		if c.Kind != ledger.Charge || c.Amount >= 0 || !c.At.Equal(at) {
			return fmt.Errorf("sqlstore: charges written together are debits made at one time (%s)", c.JobID)
		}
	}
	if tx.sql.chargeAll == "" {
		for _, c := range cs {
			if _, err := tx.LedgerApply(ctx, c.Entry, math.MinInt64); err != nil {
				return err
			}
		}
		return nil
	}
	n := len(cs)
	accounts, keys, jobIDs, models := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amounts, balances := make([]int64, n), make([]int64, n)
	for i, c := range cs {
		accounts[i], keys[i], jobIDs[i], models[i], amounts[i], balances[i] = c.AccountID, c.KeyID, c.JobID, c.Model, int64(c.Amount), c.Balance
	}
	args := []any{accounts, keys, jobIDs, models, amounts, balances, auth.Period(at), micros(at), micros(at) / dayMicros * dayMicros, monthMicros(at)}
	return tx.q.WriteAtCommit(ctx, tx.sql.chargeAll, args, nil)
}

// qRefundSpend lowers key $2's spend by $1 when its spend is of the period recorded on the
// charge of job $4 (its entry written at or after $3): one range of ledger_entries_key
// (key_id, created_at), from the job's creation.
const qRefundSpend = `UPDATE api_keys SET spent = spent - $1 WHERE id = $2 AND EXISTS (SELECT 1 FROM ledger_entries e
 WHERE e.key_id = $2 AND e.created_at >= $3 AND e.job_id = $4 AND e.kind = 'charge' AND e.period = api_keys.spent_period)`

// LedgerRefundSpend gives a refund back to the key's spend of the month its job's charge was
// taken in; a key whose spend is of another month is left as it is. It answers nothing: in a
// pipelined transaction (PostgreSQL) it goes with the next statement or the COMMIT.
func (tx *Tx) LedgerRefundSpend(ctx context.Context, keyID, jobID string, since time.Time, refund int64) error {
	return tx.q.WriteAtCommit(ctx, qRefundSpend, []any{refund, keyID, micros(since), jobID}, nil)
}

// LedgerPasses lists an account's passes and promotions.
func (tx *Tx) LedgerPasses(ctx context.Context, accountID string) ([]ledger.Pass, error) {
	rows, err := tx.q.QueryContext(ctx, `SELECT id, account_id, name, promotion, models, max_credits, uses_left, expires_at FROM passes WHERE account_id = $1 ORDER BY id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.Pass
	for rows.Next() {
		var p ledger.Pass
		var promo int
		var models string
		var expires int64
		if err := rows.Scan(&p.ID, &p.AccountID, &p.Name, &promo, &models, &p.MaxCredits, &p.UsesLeft, &expires); err != nil {
			return nil, err
		}
		p.Promotion = promo == 1
		if models != "" {
			p.Models = strings.Split(models, ",")
		}
		if expires != 0 {
			p.ExpiresAt = fromMicros(expires)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// LedgerUsePass takes one use of a pass that has uses left.
func (tx *Tx) LedgerUsePass(ctx context.Context, passID string) error {
	_, err := tx.q.ExecContext(ctx, `UPDATE passes SET uses_left = uses_left - 1 WHERE id = $1 AND uses_left > 0`, passID)
	return err
}

// LedgerInsertPass stores a pass and counts it on its account.
func (tx *Tx) LedgerInsertPass(ctx context.Context, p ledger.Pass) error {
	var exp int64
	if !p.ExpiresAt.IsZero() {
		exp = micros(p.ExpiresAt)
	}
	if _, err := tx.q.ExecContext(ctx, `INSERT INTO passes (id, account_id, name, promotion, models, max_credits, uses_left, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		p.ID, p.AccountID, p.Name, boolInt(p.Promotion), strings.Join(p.Models, ","), p.MaxCredits, p.UsesLeft, exp); err != nil {
		return err
	}
	return expectOne(tx.q.ExecContext(ctx, `UPDATE accounts SET pass_count = pass_count + 1 WHERE id = $1`, p.AccountID))
}

// LedgerClaimAllowance moves the allowance period forward; false when another got there first.
func (tx *Tx) LedgerClaimAllowance(ctx context.Context, accountID, period string) (bool, error) {
	res, err := tx.q.ExecContext(ctx, `UPDATE accounts SET allowance_period = $1 WHERE id = $2 AND allowance_period < $1`, period, accountID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// LedgerInsertAccount creates an account with a zero balance.
func (tx *Tx) LedgerInsertAccount(ctx context.Context, a auth.Account) error {
	_, err := tx.q.ExecContext(ctx, `INSERT INTO accounts (id, plan, status, balance, monthly_allowance, allowance_period, created_at, pass_only) VALUES ($1, $2, $3, 0, $4, $5, $6, $7)`,
		a.ID, string(a.Plan), string(a.Status), a.MonthlyAllowance, a.AllowancePeriod, micros(a.CreatedAt), boolInt(a.PassOnly))
	return err
}

// LedgerUpdateAccount writes an account's plan, allowance, status and pass-only flag.
func (tx *Tx) LedgerUpdateAccount(ctx context.Context, a auth.Account) error {
	return expectOne(tx.q.ExecContext(ctx, `UPDATE accounts SET plan = $1, monthly_allowance = $2, status = $3, pass_only = $4 WHERE id = $5`,
		string(a.Plan), a.MonthlyAllowance, string(a.Status), boolInt(a.PassOnly), a.ID))
}

// LedgerRevokeKeys stamps every live key of the account revoked, but its console key: the
// account's status alone refuses its console, and a revoked console key would refuse it
// for good once the account stands again.
func (tx *Tx) LedgerRevokeKeys(ctx context.Context, accountID string, at time.Time) (int, error) {
	res, err := tx.q.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE account_id = $2 AND revoked_at IS NULL AND expires_at > $1 AND console = 0`, micros(at), accountID)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
