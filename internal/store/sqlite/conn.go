package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// conn is the pool every statement goes through. It counts statements and transactions (the
// benchmark and the statements-per-job test read them through Stats), reuses prepared
// statements (compiling a statement costs more than running one of the service's), and lets
// one write transaction of this process run at a time: writers wait on a process lock instead
// of on the busy handler's sleeps. busy_timeout still covers other processes.
type conn struct {
	raw     *sql.DB
	prepare bool // reuse prepared statements
	writer  chan struct{}

	statements   atomic.Int64
	transactions atomic.Int64
	commits      atomic.Int64
	group        *group        // SQLite: group commit (group.go)
	ckpt         *checkpointer // SQLite: WAL checkpoints off the commit path (checkpoint.go)

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxPrepared bounds the statement cache: SQL built from variable parts beyond it runs unprepared.
const maxPrepared = 512

func newConn(raw *sql.DB) *conn {
	c := &conn{raw: raw, prepare: true, stmts: map[string]*sql.Stmt{}, writer: make(chan struct{}, 1)}
	c.group = newGroup(c)
	c.ckpt = newCheckpointer(c)
	return c
}

// Stats counts what ran so far.
func (c *conn) Stats() sqlstore.Stats {
	return sqlstore.Stats{Statements: c.statements.Load(), Transactions: c.transactions.Load(), Commits: c.commits.Load()}
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

func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	c.statements.Add(1)
	if s := c.stmt(ctx, q); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return c.raw.QueryContext(ctx, q, args...)
}

// QueryRowContext runs a one-row query. A write with RETURNING outside a transaction does not
// take the writer lock (the row is read after this returns); SQLite's busy handler orders it.
func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) sqlstore.Row {
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

func (c *conn) ReadAll(ctx context.Context, reads []sqlstore.Read, row func(int, sqlstore.Row) error) error {
	return sqlstore.ReadEach(ctx, c, reads, row)
}

func (c *conn) WriteAtCommit(ctx context.Context, q string, args []any, mapErr func(error) error) error {
	return sqlstore.WriteNow(ctx, c, q, args, mapErr)
}
