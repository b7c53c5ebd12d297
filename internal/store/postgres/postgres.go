// Package postgres is the store on PostgreSQL, through pgx directly: a pgxpool of connections,
// transactions pipelined with pgx.Batch (pgtx.go), the jobs engine's notices between processes
// through LISTEN and NOTIFY (notify.go) and its own migrations. The statements the service
// makes are sqlstore's; this package runs them.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

//go:embed migrations
var migrations embed.FS

// Is reports whether dsn names a PostgreSQL database (a postgres:// or postgresql:// URL).
func Is(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open connects to the database of dsn and applies its migrations. The URL's pool_max_conns
// bounds the connections this process keeps.
func Open(ctx context.Context, dsn string) (*sqlstore.DB, error) {
	return OpenAt(ctx, dsn, 0)
}

// OpenAt is Open with the migrations applied up to version only (every one when 0): a
// database as an earlier release left it, for the tests of a migration.
func OpenAt(ctx context.Context, dsn string, version int64) (*sqlstore.DB, error) {
	c, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return sqlstore.Ready(c, func() error { return c.Migrate(ctx, version) })
}

// OpenChecked connects to the database of dsn without migrating it: its schema must be the one
// this binary needs (sqlstore.CheckSchema).
func OpenChecked(ctx context.Context, dsn string) (*sqlstore.DB, error) {
	c, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return sqlstore.Ready(c, func() error { return sqlstore.CheckSchema(ctx, c.db, goose.DialectPostgres, migrations) })
}

// OpTimeout bounds each statement, read and transaction the service sends to PostgreSQL: a
// server that stops answering (frozen, overloaded, or cut off without a reset) fails what it
// holds after that long, and the request is answered, instead of waiting for ever. A live
// server answers the service's statements in milliseconds; the bound is far above that.
const OpTimeout = 30 * time.Second

// connectTimeout bounds opening a connection when the URL names no connect_timeout.
const connectTimeout = 5 * time.Second

// Conn is a pool of connections to one PostgreSQL database.
type Conn struct {
	opTimeout time.Duration // OpTimeout; shorter in tests

	pool *pgxpool.Pool
	db   *sql.DB // database/sql over the same pool: migrations, tests and tools

	statements, transactions, roundTrips atomic.Int64
}

var _ sqlstore.Conn = (*Conn)(nil)

func connect(ctx context.Context, dsn string) (*Conn, error) {
	cfg, err := poolConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &Conn{opTimeout: OpTimeout, pool: pool, db: stdlib.OpenDBFromPool(pool)}, nil
}

// bounded is ctx bounded by the connection's operation timeout, unless it ends sooner.
func (c *Conn) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= c.opTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opTimeout)
}

// poolConfig reads dsn. Without pool_max_conns (pgxpool's name for it) the pool holds four
// connections per CPU this process may use: a statement holds its connection only while it
// runs, and more connections than that left more server sessions competing for the same cores.
func poolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: database URL: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns=") {
		cfg.MaxConns = int32(max(4, 4*runtime.GOMAXPROCS(0)))
	}
	// An idle connection is kept five minutes: one closed loses its prepared statements.
	cfg.MinConns, cfg.MaxConnIdleTime = 0, 5*time.Minute
	if cfg.ConnConfig.ConnectTimeout == 0 { // neither the URL's connect_timeout nor PGCONNECT_TIMEOUT
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	return cfg, nil
}

// Migrate applies the migrations up to version (every one when 0).
func (c *Conn) Migrate(ctx context.Context, version int64) error {
	return sqlstore.Migrate(ctx, c.db, goose.DialectPostgres, migrations, version)
}

func (c *Conn) Dialect() sqlstore.Dialect { return sqlstore.Postgres }
func (c *Conn) SQL() *sql.DB              { return c.db }
func (c *Conn) Ping(ctx context.Context) error {
	return c.pool.Ping(ctx)
}

// Close closes the pool.
func (c *Conn) Close() error {
	err := c.db.Close()
	c.pool.Close()
	return err
}

// Stats counts what ran so far; every transaction commits once.
func (c *Conn) Stats() sqlstore.Stats {
	t := c.transactions.Load()
	return sqlstore.Stats{Statements: c.statements.Load(), Transactions: t, Commits: t, RoundTrips: c.roundTrips.Load()}
}

// MaxConns is the most connections the pool keeps.
func (c *Conn) MaxConns() int { return int(c.pool.Config().MaxConns) }

// ExecContext runs one statement on a connection of the pool, again on another when the
// first was lost before the statement ran (lostConnection).
func (c *Conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.statements.Add(1)
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	tag, err := c.pool.Exec(ctx, q, args...)
	if c.lost(err) {
		tag, err = c.pool.Exec(ctx, q, args...)
	}
	return driver.RowsAffected(tag.RowsAffected()), err
}

// QueryContext runs one read on a connection of the pool, again on another when the first was
// lost before the read ran.
func (c *Conn) QueryContext(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	c.statements.Add(1)
	ctx, cancel := c.bounded(ctx)
	rows, err := c.pool.Query(ctx, q, args...)
	if c.lost(err) {
		rows, err = c.pool.Query(ctx, q, args...)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return pgxRows{Rows: rows, cancel: cancel}, nil
}

// QueryRowContext runs a one-row statement as QueryContext does.
func (c *Conn) QueryRowContext(ctx context.Context, q string, args ...any) sqlstore.Row {
	c.statements.Add(1)
	return poolRow{ctx: ctx, c: c, q: q, args: args}
}

// poolRow is a one-row statement of the pool, run when it is scanned.
type poolRow struct {
	ctx  context.Context
	c    *Conn
	q    string
	args []any
}

func (r poolRow) Scan(dest ...any) error {
	ctx, cancel := r.c.bounded(r.ctx)
	defer cancel()
	err := r.c.pool.QueryRow(ctx, r.q, r.args...).Scan(dest...)
	if r.c.lost(err) {
		err = r.c.pool.QueryRow(ctx, r.q, r.args...).Scan(dest...)
	}
	return err
}

// lost reports a lost connection (lostConnection); the pool's other connections are then
// closed too (they are returned first), as what ends one session (a restart, a failover, an
// operator ending them all) has most often ended the others, so the statement runs again on a
// new one.
func (c *Conn) lost(err error) bool {
	if !lostConnection(err) {
		return false
	}
	c.pool.Reset()
	return true
}

// lostConnection reports a statement that failed because its connection was lost before the
// statement took effect: pgx sent nothing (SafeToRetry), or the server ended the session
// (SQLSTATE class 57P: an operator's pg_terminate_backend, a shutdown, a restart), which rolls
// back whatever the session had not committed. Such a statement may be run again as it is.
func lostConnection(err error) bool {
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pg *pgconn.PgError
	return errors.As(err, &pg) && strings.HasPrefix(pg.Code, "57P")
}

// ReadAll sends reads together, in one round trip, outside a transaction.
func (c *Conn) ReadAll(ctx context.Context, reads []sqlstore.Read, row func(int, sqlstore.Row) error) error {
	c.statements.Add(int64(len(reads)))
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	b := &pgx.Batch{}
	for _, r := range reads {
		b.Queue(r.SQL, r.Args...)
	}
	return readBatch(c.pool.SendBatch(ctx, b), len(reads), row)
}

func (c *Conn) WriteAtCommit(ctx context.Context, q string, args []any, mapErr func(error) error) error {
	return sqlstore.WriteNow(ctx, c, q, args, mapErr)
}

// InTx runs fn in one pipelined transaction (pgtx.go) on a connection of the pool; a
// serialization failure, a deadlock or a connection lost before the COMMIT took effect runs it
// again, up to five more times.
func (c *Conn) InTx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	ctx, cancel := c.bounded(ctx) // one bound for every try
	defer cancel()
	return retrying(func() error {
		err := c.inTx(ctx, fn)
		c.lost(err)
		return err
	})
}

func (c *Conn) inTx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The transaction's statements run on the callers' contexts: once the bound (or the
	// caller) ends the transaction, the connection's deadline ends whatever it still waits
	// for, and the connection is not used again.
	nc := pc.Conn().PgConn().Conn() // taken now: once stop fails, pc is closed under the func
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	p := &pipeTx{conn: pc.Conn(), c: c}
	c.transactions.Add(1)
	txErr := fn(p)
	if txErr == nil {
		if txErr = p.commit(ctx); txErr == nil {
			if stop() {
				pc.Release()
			} else {
				pc.Hijack().Close(context.WithoutCancel(ctx))
			}
			return nil
		}
	}
	if !stop() || p.rollback(ctx) != nil || p.conn.IsClosed() {
		pc.Hijack().Close(context.WithoutCancel(ctx)) // the connection is not fit to be used again
	} else {
		pc.Release()
	}
	return txErr
}

// InOneStatement runs fn, which makes at most one statement, on the pool, without a BEGIN and
// a COMMIT around it: one statement is a transaction of its own, and the work takes one round
// trip instead of three. A second statement is a programming error and panics before it runs.
func (c *Conn) InOneStatement(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return retrying(func() error { return fn(&oneStatement{c: c}) })
}

// retrying runs try again, up to five more times, while it fails retryably.
func retrying(try func() error) error {
	for attempt := 0; ; attempt++ {
		err := try()
		if err != nil && attempt < 5 && retryable(err) {
			continue
		}
		return err
	}
}

// retryable reports a serialization failure, a deadlock or a lost connection (lostConnection),
// wherever it sits in the error's chain: a domain error that wraps one (job_record_failed wraps
// the insert's error) is retried too.
func retryable(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01") {
		return true
	}
	return lostConnection(err)
}

// oneStatement is the querier of InOneStatement: the pool, for one statement.
type oneStatement struct {
	c    *Conn
	used bool
}

func (o *oneStatement) take() {
	if o.used {
		panic("postgres: InOneStatement's function made a second statement")
	}
	o.used = true
}

func (o *oneStatement) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	o.take()
	return o.c.ExecContext(ctx, q, args...)
}

func (o *oneStatement) QueryContext(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	o.take()
	return o.c.QueryContext(ctx, q, args...)
}

func (o *oneStatement) QueryRowContext(ctx context.Context, q string, args ...any) sqlstore.Row {
	o.take()
	return o.c.QueryRowContext(ctx, q, args...)
}

func (o *oneStatement) ReadAll(ctx context.Context, reads []sqlstore.Read, row func(int, sqlstore.Row) error) error {
	if len(reads) > 1 {
		o.take()
	}
	return sqlstore.ReadEach(ctx, o, reads, row)
}

func (o *oneStatement) WriteAtCommit(ctx context.Context, q string, args []any, mapErr func(error) error) error {
	return sqlstore.WriteNow(ctx, o, q, args, mapErr)
}

// Explain answers the plan of q with args. Sequential scans are priced out first
// (enable_seqscan off), so a plan that still scans a table has no index it could use.
func (c *Conn) Explain(ctx context.Context, q string, args ...any) ([]string, error) {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer pc.Release()
	if _, err := pc.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		return nil, err
	}
	defer pc.Exec(context.WithoutCancel(ctx), `RESET enable_seqscan`) //nolint:errcheck
	rows, err := pc.Query(ctx, "EXPLAIN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out, rows.Err()
}
