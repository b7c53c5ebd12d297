package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Backend names a database kind under test.
type Backend struct {
	Name string
	Open func(t testing.TB) *sqlstore.DB
}

// Backends lists SQLite and PostgreSQL.
func Backends() []Backend {
	return []Backend{{"sqlite", OpenSQLite}, {"postgres", OpenPostgres}}
}

// Each runs f once per backend as a subtest.
func Each(t *testing.T, f func(t *testing.T, db *sqlstore.DB)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.Open(t)) })
	}
}

// OpenSQLite opens a migrated SQLite database in a temp dir.
func OpenSQLite(t testing.TB) *sqlstore.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenSQLiteAt opens a SQLite database in a temp dir with its migrations applied up to version
// only (sqlstore.OpenAt).
func OpenSQLiteAt(t testing.TB, version int64) *sqlstore.DB {
	t.Helper()
	db, err := store.OpenAt(context.Background(), filepath.Join(t.TempDir(), "test.db"), version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenPostgresAt opens a PostgreSQL database in a fresh schema with its migrations applied up
// to version only (sqlstore.OpenAt).
func OpenPostgresAt(t testing.TB, version int64) *sqlstore.DB {
	t.Helper()
	db, err := store.OpenAt(context.Background(), PostgresSchemaDSN(t, nil), version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// PostgresDSN returns the test DSN, skipping (or failing under CI) when unset.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("MODELEXEC_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELEXEC_TEST_POSTGRES is unset under CI=true: PostgreSQL tests must run")
		}
		t.Skip("MODELEXEC_TEST_POSTGRES unset: skipping PostgreSQL (set it to postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return dsn
}

// OpenPostgres opens a migrated PostgreSQL database in a fresh schema, dropped at cleanup.
func OpenPostgres(t testing.TB) *sqlstore.DB {
	t.Helper()
	return OpenPostgresWith(t, nil)
}

// OpenPostgresWith is OpenPostgres with params added to the database URL (pool_max_conns…).
func OpenPostgresWith(t testing.TB, params url.Values) *sqlstore.DB {
	t.Helper()
	db, err := store.Open(context.Background(), PostgresSchemaDSN(t, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// PostgresSchemaDSN creates a fresh, empty schema, dropped at cleanup, and answers the test DSN
// with it as the search path and params added.
func PostgresSchemaDSN(t testing.TB, params url.Values) string {
	t.Helper()
	dsn := PostgresDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema (is PostgreSQL up at %s?): %v", dsn, err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		admin.Close()
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}
