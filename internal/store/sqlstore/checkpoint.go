package sqlstore

import (
	"context"
	"time"
)

// Checkpoints (SQLite). In WAL mode a COMMIT appends pages to the WAL, and by default the
// connection whose COMMIT passes a thousand pages copies them back into the database file
// there and then: about a tenth of the committer's time (group.go), which every write waits
// for, went to it. This process's connections do not checkpoint on COMMIT
// (wal_autocheckpoint(0) in the DSN); this loop does, PASSIVE (it never blocks the writer,
// which goes on appending while it copies), shortly after commits and at least every
// checkpointEvery. Another process on the same file (the CLI) checkpoints as SQLite does by
// default.

const checkpointEvery = 250 * time.Millisecond

// checkpointer copies the WAL into the database file in the background.
type checkpointer struct {
	c       *conn
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

func newCheckpointer(c *conn) *checkpointer {
	k := &checkpointer{c: c, kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go k.run()
	return k
}

// committed tells the loop that the WAL grew.
func (k *checkpointer) committed() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *checkpointer) run() {
	defer close(k.stopped)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	dirty := false
	for {
		select {
		case <-k.stop:
			return
		case <-k.kick:
			dirty = true
			continue
		case <-t.C:
		}
		if !dirty {
			continue
		}
		// A failed pass (the file busy with another process's checkpoint) is retried at the
		// next tick; the WAL only grows meanwhile.
		dirty = k.pass() != nil
	}
}

// pass copies what the WAL holds into the database file, as far as readers allow.
func (k *checkpointer) pass() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := k.c.raw.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	return err
}

func (k *checkpointer) close() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.stopped
}
