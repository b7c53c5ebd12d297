// Package store opens the database a data source names: a postgres:// or postgresql:// URL
// for PostgreSQL (store/postgres), else the path of a SQLite file, optionally written
// sqlite:PATH (store/sqlite). Both are sqlstore.DBs: the same statements and ports over each
// database's own connection. Any other URL is refused rather than taken for a file name.
package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/sqlite"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// CheckDSN refuses a data source that is a URL of another kind than PostgreSQL's (mysql://,
// sqlite://, http://…): taken for a SQLite path, it would make a file named after it.
func CheckDSN(dsn string) error {
	if postgres.Is(dsn) || !strings.Contains(dsn, "://") {
		return nil
	}
	return fmt.Errorf("database %s is neither a postgres:// (or postgresql://) URL nor the path of a SQLite file (PATH or sqlite:PATH)", Redacted(dsn))
}

// Redacted is dsn as a message may show it: a URL without its password, whether in its
// user-info or in a password or sslpassword parameter (PostgreSQL reads both), a path as given.
func Redacted(dsn string) string {
	if !strings.Contains(dsn, "://") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	if q := u.Query(); u.RawQuery != "" {
		hidden := false
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
				q.Set(k, "xxxxx")
				hidden = true
			}
		}
		if hidden {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// SQLitePath is the file a SQLite data source names (PATH or sqlite:PATH); ok is false for a
// PostgreSQL URL.
func SQLitePath(dsn string) (path string, ok bool) {
	if postgres.Is(dsn) {
		return "", false
	}
	return strings.TrimPrefix(dsn, "sqlite:"), true
}

// Open opens the database of dsn and applies its migrations.
func Open(ctx context.Context, dsn string) (*sqlstore.DB, error) { return OpenAt(ctx, dsn, 0) }

// OpenChecked opens the database of dsn without applying any migration: it fails with a
// *sqlstore.SchemaError when the schema is absent or at another version than this binary's.
// The console commands open the database this way; only migrate and serve migrate it.
func OpenChecked(ctx context.Context, dsn string) (*sqlstore.DB, error) {
	if err := CheckDSN(dsn); err != nil {
		return nil, err
	}
	if postgres.Is(dsn) {
		return postgres.OpenChecked(ctx, dsn)
	}
	return sqlite.OpenChecked(ctx, dsn)
}

// OpenAt opens the database of dsn with its migrations applied up to version only (every one
// when 0).
func OpenAt(ctx context.Context, dsn string, version int64) (*sqlstore.DB, error) {
	if err := CheckDSN(dsn); err != nil {
		return nil, err
	}
	if postgres.Is(dsn) {
		return postgres.OpenAt(ctx, dsn, version)
	}
	return sqlite.OpenAt(ctx, dsn, version)
}
