package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
)

// THR: on SQLite a COMMIT never checkpoints (the committer's time went a tenth to it); the
// background pass copies the WAL into the database file.
func TestCheckpointsOffTheCommitPath(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "ckpt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var auto int
	if err := db.sql.raw.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("wal_autocheckpoint = %d (%v), want 0", auto, err)
	}
	if _, err := db.sql.raw.ExecContext(ctx, `CREATE TABLE probe (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := db.InTx(ctx, func(tx *Tx) error {
			_, err := tx.q.ExecContext(ctx, `INSERT INTO probe VALUES ($1)`, i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.sql.ckpt.pass(); err != nil {
		t.Fatal(err)
	}
	var busy, log, done int
	if err := db.sql.raw.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil || busy != 0 || log != done {
		t.Fatalf("after a pass: busy %d, WAL frames %d, checkpointed %d (%v)", busy, log, done, err)
	}
}
