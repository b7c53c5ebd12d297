package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

func (f DataFlags) dsn() string {
	if f.Database != "" {
		return f.Database
	}
	return filepath.Join(f.Data, "modelexec.db")
}

// open opens the database and applies its migrations (serve and migrate). The data folder is
// made only when the SQLite file lives in it: a deployment on PostgreSQL and S3 keeps nothing
// there, and may run where the working folder cannot be written.
func (f DataFlags) open(ctx context.Context) (*sqlstore.DB, error) {
	if err := f.makeDatabaseFolder(); err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, f.dsn())
	var se *sqlstore.SchemaError
	if errors.As(err, &se) {
		// A schema newer than this binary's: serve and migrate refuse it as the console does.
		return nil, fmt.Errorf("the database at %s: %w", f.where(), se)
	}
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// makeDatabaseFolder makes the folder of a SQLite database file; a PostgreSQL database needs none.
func (f DataFlags) makeDatabaseFolder() error {
	dsn := f.dsn()
	if err := store.CheckDSN(dsn); err != nil {
		return err
	}
	path, ok := store.SQLitePath(dsn)
	if !ok {
		return nil
	}
	return os.MkdirAll(filepath.Dir(path), 0o700)
}

// minSecret is the shortest deployment secret taken. The secret keys the HMACs of signed links,
// studio tickets and console forms: a short one could be found from one signed link, and every
// link forged after it.
const minSecret = 16

// secret returns the deployment secret: the flag (or MODELEXEC_SECRET), else in dev mode the
// one kept in <data>/dev-secret (made on first use). Without either, keys are not configured.
func (f StoreFlags) secret(dev bool) (string, error) {
	if f.Secret != "" {
		if len(f.Secret) < minSecret {
			return "", fmt.Errorf("the deployment secret (--secret or MODELEXEC_SECRET) is %d characters: give at least %d, random (e.g. openssl rand -hex 32); it signs links, tickets and forms", len(f.Secret), minSecret)
		}
		return f.Secret, nil
	}
	path := filepath.Join(f.Data, "dev-secret")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if !dev {
		return "", nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	s := hex.EncodeToString(b[:])
	if err := os.MkdirAll(f.Data, 0o700); err != nil {
		return "", err
	}
	return s, os.WriteFile(path, []byte(s+"\n"), 0o600)
}

// logger is the process's structured log on w. go-redis's own messages (a failed dial, a
// lost connection) go into it too, rather than as plain lines on stderr between its records.
func (f LogFlags) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(f.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	var l *slog.Logger
	if f.LogFormat == "json" {
		l = slog.New(slog.NewJSONHandler(w, opts))
	} else {
		l = slog.New(slog.NewTextHandler(w, opts))
	}
	redis.SetLogger(redisLogger{l})
	return l
}

// redisLogger writes go-redis's messages as warnings of the process's log.
type redisLogger struct{ log *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.log.WarnContext(ctx, "redis", "message", fmt.Sprintf(format, v...))
}

// authService wires the auth domain onto the store.
func (f StoreFlags) authService(db *sqlstore.DB, dev bool, log *slog.Logger, now func() time.Time) (*auth.Service, error) {
	secret, err := f.secret(dev)
	if err != nil {
		return nil, err
	}
	return auth.NewService(db, auth.Format{Prefix: f.KeyPrefix}, auth.NewHasher(secret), now, log), nil
}

func utcNow() time.Time { return time.Now().UTC() }
