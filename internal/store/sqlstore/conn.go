package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
)

// conn is the pool every statement goes through. It counts statements and transactions (the
// benchmark and the statements-per-job test read them through Stats), reuses prepared
// statements on SQLite (compiling SQL was a quarter of the CPU of a job), and on SQLite lets
// one write transaction of this process run at a time: writers wait on a process lock instead of
// on the busy handler's sleeps. busy_timeout still covers other processes.
type conn struct {
	raw     *sql.DB
	prepare bool // reuse prepared statements (SQLite; pgx caches its own per connection)
	writer  chan struct{}

	statements   atomic.Int64
	transactions atomic.Int64
	commits      atomic.Int64
	pipeTrips    atomic.Int64  // round trips of pipelined transactions (pgtx.go)
	group        *group        // SQLite: group commit (group.go)
	ckpt         *checkpointer // SQLite: WAL checkpoints off the commit path (checkpoint.go)

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxPrepared bounds the statement cache: SQL built from variable parts beyond it runs unprepared.
const maxPrepared = 512

func newConn(raw *sql.DB, d Dialect) *conn {
	c := &conn{raw: raw, prepare: d == SQLite, stmts: map[string]*sql.Stmt{}}
	if d == SQLite {
		c.writer = make(chan struct{}, 1)
		c.group = newGroup(c)
		c.ckpt = newCheckpointer(c)
	}
	return c
}

// Commits reports the write transactions run so far on the database itself: with group
// commit on SQLite, one COMMIT carries several of the transactions Stats counts.
func (db *DB) Commits() int64 { return db.sql.commits.Load() }

// PipelinedRoundTrips reports the round trips the jobs engine's pipelined transactions
// (PostgreSQL, pgtx.go) have taken so far, BEGIN and COMMIT included.
func (db *DB) PipelinedRoundTrips() int64 { return db.sql.pipeTrips.Load() }

// Stats reports the statements and transactions run so far (BEGIN and COMMIT not counted as
// statements).
func (db *DB) Stats() (statements, transactions int64) {
	return db.sql.statements.Load(), db.sql.transactions.Load()
}

func (c *conn) stmt(ctx context.Context, q string) *sql.Stmt {
	if !c.prepare {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts[q]; ok {
		return s
	}
	if len(c.stmts) >= maxPrepared {
		return nil
	}
	s, err := c.raw.PrepareContext(ctx, q)
	if err != nil {
		return nil // the statement runs unprepared and reports its own error
	}
	c.stmts[q] = s
	return s
}

// lockWriter takes the process's SQLite write lock for a write outside a transaction.
func (c *conn) lockWriter(ctx context.Context, q string) (func(), error) {
	if c.writer == nil || !isWrite(q) {
		return func() {}, nil
	}
	c.ckpt.committed()
	select {
	case c.writer <- struct{}{}:
		return func() { <-c.writer }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func isWrite(q string) bool {
	q = strings.TrimLeft(q, " \t\n")
	if len(q) < 6 {
		return false
	}
	switch strings.ToUpper(q[:6]) {
	case "INSERT", "UPDATE", "DELETE":
		return true
	}
	return false
}

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.statements.Add(1)
	unlock, err := c.lockWriter(ctx, q)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s := c.stmt(ctx, q); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return c.raw.ExecContext(ctx, q, args...)
}

func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (rowSet, error) {
	c.statements.Add(1)
	if s := c.stmt(ctx, q); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return c.raw.QueryContext(ctx, q, args...)
}

// QueryRowContext runs a one-row query. A write with RETURNING outside a transaction does not
// take the writer lock (the row is read after this returns); SQLite's busy handler orders it.
func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	c.statements.Add(1)
	if c.ckpt != nil && isWrite(q) {
		c.ckpt.committed()
	}
	if s := c.stmt(ctx, q); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return c.raw.QueryRowContext(ctx, q, args...)
}

func (c *conn) PingContext(ctx context.Context) error { return c.raw.PingContext(ctx) }

func (c *conn) Close() error {
	if c.group != nil {
		c.group.close()
	}
	if c.ckpt != nil {
		c.ckpt.close()
		_, _ = c.raw.Exec(`PRAGMA wal_checkpoint(PASSIVE)`) // leave the WAL short for the next opener
	}
	c.mu.Lock()
	for _, s := range c.stmts {
		s.Close()
	}
	c.stmts = map[string]*sql.Stmt{}
	c.mu.Unlock()
	return c.raw.Close()
}

// begin starts a transaction; on SQLite it first takes the process's write lock, which the
// returned release gives back after COMMIT or ROLLBACK.
func (c *conn) begin(ctx context.Context) (*sql.Tx, func(), error) {
	release := func() {}
	if c.writer != nil {
		select {
		case c.writer <- struct{}{}:
			release = func() { <-c.writer }
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	tx, err := c.raw.BeginTx(ctx, nil)
	if err != nil {
		release()
		return nil, nil, err
	}
	c.transactions.Add(1)
	c.commits.Add(1)
	if c.ckpt != nil {
		c.ckpt.committed()
	}
	return tx, release, nil
}

// txConn is a transaction's querier outside the group commit (PostgreSQL's transactions):
// counted, and running the pool's prepared statements where the pool keeps them.
type txConn struct {
	tx *sql.Tx
	c  *conn
}

func (t txConn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	t.c.statements.Add(1)
	if s := t.c.stmt(ctx, q); s != nil {
		return t.tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, q, args...)
}

func (t txConn) QueryContext(ctx context.Context, q string, args ...any) (rowSet, error) {
	t.c.statements.Add(1)
	if s := t.c.stmt(ctx, q); s != nil {
		return t.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

func (t txConn) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	t.c.statements.Add(1)
	if s := t.c.stmt(ctx, q); s != nil {
		return t.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}

func (c *conn) readAll(ctx context.Context, reads []read, row func(int, scanner) error) error {
	return readEach(ctx, c, reads, row)
}

func (t txConn) readAll(ctx context.Context, reads []read, row func(int, scanner) error) error {
	return readEach(ctx, t, reads, row)
}
