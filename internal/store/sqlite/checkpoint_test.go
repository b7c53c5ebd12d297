package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// THR: on SQLite a COMMIT never checkpoints (the committer's time went a tenth to it); the
// background pass copies the WAL into the database file.
func TestCheckpointsOffTheCommitPath(t *testing.T) {
	ctx := context.Background()
	db, err := openConn(ctx, filepath.Join(t.TempDir(), "ckpt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var auto int
	if err := db.raw.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("wal_autocheckpoint = %d (%v), want 0", auto, err)
	}
	if _, err := db.raw.ExecContext(ctx, `CREATE TABLE probe (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := db.InTx(ctx, func(tx sqlstore.Querier) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO probe VALUES ($1)`, i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpointer's own goroutine may be in a pass of its own at this moment (the commits
	// above woke it): a check that meets it reads busy, and the pass and the check run again.
	var busy, log, done int
	for range 100 {
		if err := db.ckpt.pass(); err != nil {
			t.Fatal(err)
		}
		if err := db.raw.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		if busy == 0 {
			break
		}
	}
	if busy != 0 || log != done {
		t.Fatalf("after a pass: busy %d, WAL frames %d, checkpointed %d", busy, log, done)
	}
}

// THR: under a write load that never pauses, the WAL starts over instead of growing by
// everything written (a pass beside a busy committer never finds it fully copied).
func TestCheckpointsRestartTheWALUnderLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "restart.db")
	db, err := openConn(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.raw.ExecContext(ctx, `CREATE TABLE probe (x BLOB)`); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	stopped := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				stopped <- nil
				return
			default:
			}
			// Two overflow pages and a leaf: three WAL frames a transaction.
			if err := db.InTx(ctx, func(tx sqlstore.Querier) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO probe VALUES (randomblob(7000))`)
				return err
			}); err != nil {
				stopped <- err
				return
			}
		}
	}()
	// The writer writes eight times restartFrames pages while passes run, as the background
	// loop runs them.
	before := db.transactions.Load()
	for db.transactions.Load()-before < 8*restartFrames/3 {
		if err := db.ckpt.pass(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if limit := int64(6 * restartFrames * 4120); fi.Size() > limit { // without a restart: 8 × restartFrames frames
		t.Fatalf("WAL is %d bytes after the load, want at most %d: it did not start over", fi.Size(), limit)
	}
}
