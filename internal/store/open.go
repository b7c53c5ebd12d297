// Package store opens the database a data source names: a postgres:// or postgresql:// URL
// for PostgreSQL (store/postgres), anything else a SQLite file (store/sqlite). Both are
// sqlstore.DBs: the same statements and ports over each database's own connection.
package store

import (
	"context"

	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/sqlite"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Open opens the database of dsn and applies its migrations.
func Open(ctx context.Context, dsn string) (*sqlstore.DB, error) { return OpenAt(ctx, dsn, 0) }

// OpenChecked opens the database of dsn without applying any migration: it fails with a
// *sqlstore.SchemaError when the schema is absent or at another version than this binary's.
// The console commands open the database this way; only migrate and serve migrate it.
func OpenChecked(ctx context.Context, dsn string) (*sqlstore.DB, error) {
	return OpenAt(sqlstore.CheckOnly(ctx), dsn, 0)
}

// OpenAt opens the database of dsn with its migrations applied up to version only (every one
// when 0).
func OpenAt(ctx context.Context, dsn string, version int64) (*sqlstore.DB, error) {
	if postgres.Is(dsn) {
		return postgres.OpenAt(ctx, dsn, version)
	}
	return sqlite.OpenAt(ctx, dsn, version)
}
