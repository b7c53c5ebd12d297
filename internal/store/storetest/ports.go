package storetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/console"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Stores is one database's implementation of each domain port the suite checks, and the few
// things the suite reads past the ports (Inspect). Each field is the interface its domain
// package owns, so the suite checks what the domain relies on, not what one adapter offers.
type Stores struct {
	Auth    auth.Store
	Users   auth.UserStore
	Ledger  ledger.Store
	Usage   ledger.UsageStore
	Jobs    jobs.Store
	Outbox  webhooks.Outbox
	Chat    chat.Store
	SignIns console.SignInFailures
	Inspect Inspect
}

// Inspect is what the suite reads past the ports, and only that: which database it runs on
// (SQLite runs one writer at a time, PostgreSQL pipelines), rows a test sets up or reads back
// in SQL, the plans of the hot statements, the pipeline's round trips, and the migrations
// still to apply (a database opened at an earlier version). No domain package calls these.
type Inspect interface {
	Dialect() sqlstore.Dialect
	SQL() *sql.DB
	// Explain answers the plan of one of sqlstore.HotQueries, a line per step.
	Explain(ctx context.Context, name string) ([]string, error)
	PipelinedRoundTrips() int64
	Migrate(ctx context.Context) error
}

var _ Inspect = (*sqlstore.DB)(nil)

// PortsOf says which value of the SQL store serves each port: the one place the suite is tied
// to the adapter.
func PortsOf(db *sqlstore.DB) Stores {
	return Stores{
		Auth:    db,
		Users:   db,
		Ledger:  db,
		Usage:   db,
		Jobs:    sqlstore.Jobs{DB: db},
		Outbox:  sqlstore.WebhookOutbox{DB: db},
		Chat:    sqlstore.Chat{DB: db},
		SignIns: db,
		Inspect: db,
	}
}

// SQLitePorts is the ports of a fresh, migrated SQLite database (OpenSQLite).
func SQLitePorts(t testing.TB) Stores { return PortsOf(OpenSQLite(t)) }

// PostgresPorts is the ports of a fresh, migrated PostgreSQL schema (OpenPostgres).
func PostgresPorts(t testing.TB) Stores { return PortsOf(OpenPostgres(t)) }

// SQLitePortsAt is the ports of a SQLite database migrated up to version only (OpenSQLiteAt).
func SQLitePortsAt(t testing.TB, version int64) Stores { return PortsOf(OpenSQLiteAt(t, version)) }

// PostgresPortsAt is the ports of a PostgreSQL schema migrated up to version only
// (OpenPostgresAt).
func PostgresPortsAt(t testing.TB, version int64) Stores {
	return PortsOf(OpenPostgresAt(t, version))
}
