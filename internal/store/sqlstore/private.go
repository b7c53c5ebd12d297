package sqlstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// createPrivate makes a SQLite database file readable by the service's user only: its
// folder 0700 and the file 0600, created before SQLite opens it. SQLite gives the -wal and
// -shm files it makes beside the database the database file's own permissions, so they
// are 0600 too. The database holds key hashes, balances and webhook secrets. An existing
// file keeps the permissions its operator gave it; in-memory databases have no file.
func createPrivate(path string) error {
	if path == "" || strings.HasPrefix(path, ":") || strings.Contains(path, "mode=memory") {
		return nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}
