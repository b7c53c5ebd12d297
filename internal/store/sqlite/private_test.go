package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelexec/modelexec/internal/store"
)

// TestSQLiteFilesPrivate: a new SQLite database, its -wal and -shm files are 0600 and the
// folder made for it 0700: key hashes, balances and webhook secrets are readable by the
// service's own user only (the process umask notwithstanding).
func TestSQLiteFilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "modelexec.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.SQL().ExecContext(context.Background(), "CREATE TABLE perm_probe (x INTEGER); INSERT INTO perm_probe VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o700 {
		t.Errorf("data folder mode %o, want 700", got)
	}
	seen := 0
	for _, name := range []string{"modelexec.db", "modelexec.db-wal", "modelexec.db-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if os.IsNotExist(err) && name != "modelexec.db" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		seen++
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s mode %o, want 600", name, got)
		}
	}
	if seen < 2 {
		t.Fatalf("only %d of the database files exist; the WAL was expected after a write", seen)
	}
}

// Issue 30 (item 10): a database file an older release left readable by others (0644) is made
// private when the service opens it, with its -wal file.
func TestSQLiteFileMadePrivateAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "modelexec.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil { // an empty WAL, as a clean close may leave
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err = store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, p := range []string{path, path + "-wal"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s mode %o after start, want 600", filepath.Base(p), got)
		}
	}
}
