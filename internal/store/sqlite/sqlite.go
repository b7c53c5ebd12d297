// Package sqlite is the store on SQLite (modernc.org/sqlite, no cgo), the embedded default: one
// file in WAL mode, every transaction of the process given to one committer that commits
// those waiting together (group.go), WAL checkpoints off the commit path (checkpoint.go),
// statements prepared once, a file only the service's user may read (private.go) and its own
// migrations. The statements the service makes are sqlstore's; this package runs them.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"strings"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // driver "sqlite"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

//go:embed migrations
var migrations embed.FS

// Open opens the database file at path (optionally prefixed sqlite:), made if missing, and
// applies its migrations.
func Open(ctx context.Context, path string) (*sqlstore.DB, error) { return OpenAt(ctx, path, 0) }

// OpenAt is Open with the migrations applied up to version only (every one when 0): a
// database as an earlier release left it, for the tests of a migration.
func OpenAt(ctx context.Context, path string, version int64) (*sqlstore.DB, error) {
	c, err := open(strings.TrimPrefix(path, "sqlite:"))
	if err != nil {
		return nil, err
	}
	return sqlstore.Ready(c, func() error { return c.Migrate(ctx, version) })
}

// OpenChecked opens the database file at path (optionally prefixed sqlite:) without migrating
// it: its schema must be the one this binary needs (sqlstore.CheckSchema).
func OpenChecked(ctx context.Context, path string) (*sqlstore.DB, error) {
	c, err := open(strings.TrimPrefix(path, "sqlite:"))
	if err != nil {
		return nil, err
	}
	return sqlstore.Ready(c, func() error { return sqlstore.CheckSchema(ctx, c.raw, goose.DialectSQLite3, migrations) })
}

func open(path string) (*conn, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	// WAL lets readers run beside the one writer; immediate transactions take the write lock
	// up front so two writers queue on busy_timeout instead of deadlocking on an upgrade.
	// No checkpoint on COMMIT: this process checkpoints in the background (checkpoint.go).
	// Temporary files in memory: group commit (group.go) runs a transaction that fails in a
	// SAVEPOINT, whose sub-journal copies every page the transaction first touches.
	q := "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)&_pragma=temp_store(MEMORY)&_txlock=immediate"
	db, err := sql.Open("sqlite", "file:"+path+q)
	if err != nil {
		return nil, err
	}
	// Idle connections as many as open ones: a connection closed when idle loses its prepared
	// statements and its page cache.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return newConn(db), nil
}

var _ sqlstore.Conn = (*conn)(nil)

// Migrate applies the migrations up to version (every one when 0).
func (c *conn) Migrate(ctx context.Context, version int64) error {
	return sqlstore.Migrate(ctx, c.raw, goose.DialectSQLite3, migrations, version)
}

func (c *conn) Dialect() sqlstore.Dialect      { return sqlstore.SQLite }
func (c *conn) SQL() *sql.DB                   { return c.raw }
func (c *conn) Ping(ctx context.Context) error { return c.raw.PingContext(ctx) }

// InTx runs fn in the next group commit (group.go).
func (c *conn) InTx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return c.group.do(ctx, fn)
}

// InOneStatement is InTx: a write goes through the group commit whatever its size.
func (c *conn) InOneStatement(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return c.InTx(ctx, fn)
}

// Explain answers SQLite's query plan of q with args, one line per plan node.
func (c *conn) Explain(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := c.raw.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSpace(detail))
	}
	return out, rows.Err()
}
