package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDatabaseOfAnotherKindRefused: a --database URL that is neither PostgreSQL's nor a SQLite
// path (mysql://…) is refused with a message naming the accepted forms, by serve, migrate and a
// console command alike, and no SQLite file named after it is made.
func TestDatabaseOfAnotherKindRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"serve", "--dev", "--api-addr", freePort(t), "--queue-addr", freePort(t), "--sync-addr", freePort(t)},
		{"migrate"},
		{"accounts", "show", "acct_x"},
		{"accounts", "create", "--create"},
	} {
		_, _, err := runCLI(t, nil, append(args, "--data", filepath.Join(dir, "data"), "--database", "mysql://user:hunter2@foo/db")...)
		if err == nil || !strings.Contains(err.Error(), "neither a postgres:// (or postgresql://) URL nor the path of a SQLite file") {
			t.Fatalf("%v --database mysql://…: modelexec: %v", args, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%v: the message shows the password: %v", args, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "mysql:")); err == nil {
		t.Fatal("a folder named mysql: was made")
	}
}
