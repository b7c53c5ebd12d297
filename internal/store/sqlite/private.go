package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// createPrivate makes a SQLite database file readable by the service's user only: its
// folder 0700 and the file 0600, created before SQLite opens it. SQLite gives the -wal and
// -shm files it makes beside the database the database file's own permissions, so they
// are 0600 too. The database holds key hashes, balances and webhook secrets: an existing file
// that others may read (0644, as an older release left it) is made 0600 too, with the -wal
// and -shm files beside it. In-memory databases have no file.
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
		return restrict(path)
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// restrict takes every permission from group and others on the database file and the -wal and
// -shm files beside it, where any was given.
func restrict(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, st.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("sqlite: %s may be read by others (mode %o) and could not be made private: %w", p, st.Mode().Perm(), err)
		}
	}
	return nil
}
