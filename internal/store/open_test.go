package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/store"
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
