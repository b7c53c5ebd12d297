package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestOpenRefusesOtherURLs: a URL of another database (or sqlite://) is refused, naming the
// accepted forms, instead of becoming a SQLite file named after it.
func TestOpenRefusesOtherURLs(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, dsn := range []string{"mysql://foo", "sqlite:///x.db", "http://db.internal/x"} {
		db, err := store.Open(context.Background(), dsn)
		if err == nil {
			db.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "postgres://") || !strings.Contains(err.Error(), "sqlite:PATH") {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
	}
	for _, dsn := range []string{"postgres://u@h/d", "postgresql://u@h/d", "data/modelexec.db", "sqlite:data/x.db", "/var/lib/modelexec/modelexec.db"} {
		if err := store.CheckDSN(dsn); err != nil {
			t.Fatalf("CheckDSN(%q): %v", dsn, err)
		}
	}
}

// TestOpenRefusesANewerSchema: opening a database a newer binary migrated (its goose table
// records a version above this binary's last migration) fails with the *sqlstore.SchemaError
// the console commands give, instead of goose skipping the unknown versions and the server
// running on tables it does not understand. Both databases.
func TestOpenRefusesANewerSchema(t *testing.T) {
	sqlitePath := filepath.Join(t.TempDir(), "modelexec.db")
	dsns := map[string]string{"sqlite": sqlitePath}
	if os.Getenv("MODELEXEC_TEST_POSTGRES") != "" {
		dsns["postgres"] = storetest.PostgresSchemaDSN(t, nil)
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			if err := db.SQL().QueryRowContext(ctx, `SELECT MAX(version_id) FROM goose_db_version`).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if _, err := db.SQL().ExecContext(ctx, fmt.Sprintf(`INSERT INTO goose_db_version (version_id, is_applied, tstamp) VALUES (%d, true, CURRENT_TIMESTAMP)`, want+10)); err != nil {
				t.Fatal(err)
			}
			db.Close()
			for open, f := range map[string]func(context.Context, string) (*sqlstore.DB, error){"Open": store.Open, "OpenChecked": store.OpenChecked} {
				db, err := f(ctx, dsn)
				if err == nil {
					db.Close()
				}
				var se *sqlstore.SchemaError
				if !errors.As(err, &se) || se.Have != want+10 || se.Want != want {
					t.Fatalf("%s on a schema at %d (binary's %d): %v", open, want+10, want, err)
				}
			}
		})
	}
}

// TestRedactedHidesEveryPassword: a PostgreSQL URL's password is hidden wherever it is given,
// in the user-info or as a password or sslpassword parameter; the rest stays readable.
func TestRedactedHidesEveryPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:UPW@db.internal/modelexec?sslmode=require",
		"postgres://u@db.internal/modelexec?password=QPW&sslmode=require",
		"postgresql://u@db.internal/modelexec?sslmode=verify-full&sslpassword=SPW&PassWord=QPW",
	} {
		got := store.Redacted(dsn)
		for _, secret := range []string{"UPW", "QPW", "SPW"} {
			if strings.Contains(got, secret) {
				t.Fatalf("Redacted(%q) = %q: shows %s", dsn, got, secret)
			}
		}
		if !strings.Contains(got, "db.internal/modelexec") || !strings.Contains(got, "sslmode=") {
			t.Fatalf("Redacted(%q) = %q: lost the rest", dsn, got)
		}
	}
	if got := store.Redacted("data/modelexec.db"); got != "data/modelexec.db" {
		t.Fatalf("Redacted of a path: %q", got)
	}
}
