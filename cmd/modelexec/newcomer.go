package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"

	"github.com/modelexec/modelexec/internal/server"
)

// version is set at link time by release builds (-ldflags "-X main.version=v1.2.3");
// otherwise the module version and VCS stamp the Go toolchain records are used.
var version string

// commit is set at link time by release builds (scripts/release) for a checkout the Go
// toolchain cannot stamp (a git worktree, whose .git is a file); the build info's commit wins.
var commit string

// versionString describes this binary: version, commit, build time, Go and platform.
func versionString() string {
	v := version
	var rev, at, dirty string
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+modified"
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if rev == "" {
		rev = commit
	}
	out := "modelexec " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " " + rev + dirty
		if at != "" {
			out += " " + at
		}
	}
	return out + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// VersionCmd prints the version (as --version does).
type VersionCmd struct{}

func (VersionCmd) Run(e *env) error {
	_, err := fmt.Fprintln(e.stdout, versionString())
	return err
}

// requireDatabase refuses a console command on a SQLite database that does not exist:
// run from the wrong folder, it would otherwise create an empty one and act on that
// (an account "not found", a key minted into a database no server reads). --create asks
// for the new database; serve and migrate always make it.
func (f ConsoleFlags) requireDatabase() error {
	if f.Create {
		return nil
	}
	dsn := f.dsn()
	if err := store.CheckDSN(dsn); err != nil {
		return err
	}
	path, ok := store.SQLitePath(dsn)
	if !ok {
		return nil // a missing PostgreSQL database fails to connect by itself; one without the schema is refused on opening
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no database at %s: run from the folder that holds it, point --data or --database at it, "+
			"or add --create to make a new empty one (modelexec migrate and serve make it too)", path)
	}
	return nil
}

// openExisting opens the store for a console command: the database must exist (or
// --create be given), and its schema be the one this binary needs. A console command never
// migrates (only migrate and serve do): on a database with no schema it would make one in the
// wrong place, and on an older one it would upgrade it under the running processes. --create
// makes the schema of a database that has none.
func (f ConsoleFlags) openExisting(ctx context.Context) (*sqlstore.DB, error) {
	if err := f.requireDatabase(); err != nil {
		return nil, err
	}
	db, err := store.OpenChecked(ctx, f.dsn())
	var se *sqlstore.SchemaError
	if errors.As(err, &se) {
		if se.Have == 0 && f.Create {
			return f.open(ctx)
		}
		if se.Have == 0 {
			return nil, fmt.Errorf("the database at %s has no modelexec schema (run modelexec migrate first)", f.where())
		}
		return nil, fmt.Errorf("the database at %s: %w", f.where(), se)
	}
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// where names the database for a message: a URL without its password, or the file's path.
func (f DataFlags) where() string {
	if path, ok := store.SQLitePath(f.dsn()); ok {
		return path
	}
	return store.Redacted(f.dsn())
}

// checkListenFree fails when one of addrs cannot be listened on, naming each busy one.
// serve --dev checks before it mints the development key, which is shown once: a busy
// port found later would lose the key with the process.
func checkListenFree(addrs map[string]string) error {
	var busy []string
	for name, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			busy = append(busy, fmt.Sprintf("%s address %s: %v", name, addr, err))
			continue
		}
		_ = ln.Close()
	}
	if len(busy) == 0 {
		return nil
	}
	sort.Strings(busy)
	return fmt.Errorf("cannot listen (nothing was created; free the port or pass another address): %s", strings.Join(busy, "; "))
}

// listenAddrs are the addresses this process will listen on, by surface.
func (c *ServeCmd) listenAddrs() map[string]string {
	roles, _ := server.ParseRoles(c.Roles) // a bad list is refused later, naming the role
	out := map[string]string{}
	for role, addr := range map[server.Role]string{server.RoleAPI: c.APIAddr, server.RoleQueue: c.QueueAddr, server.RoleSync: c.SyncAddr} {
		if roles[role] {
			out[string(role)] = addr
		}
	}
	if c.MetricsAddr != "" {
		out["operator"] = c.MetricsAddr
	}
	return out
}
