package sqlite

import (
	"context"
	"time"
)

// Checkpoints (SQLite). In WAL mode a COMMIT appends pages to the WAL, and by default the
// connection whose COMMIT passes a thousand pages copies them back into the database file
// there and then, on the committer's time (group.go), which every write waits for. This process's connections do not checkpoint on COMMIT
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
//
// SQLite writes the WAL from its start again only when a write transaction begins with every
// frame already copied; otherwise it appends. A pass run beside a busy committer never
// leaves it so (the committer appends while the pass copies), and the WAL grew by the whole
// write load, about 100 MB a second at full speed, until the load paused. So once the WAL
// holds restartFrames, the pass copies again until what was appended meanwhile is short,
// and copies that last part holding the write lock: the committer waits for a few hundred
// pages at most, and its next COMMIT writes the WAL from its start.
func (k *checkpointer) pass() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	frames, err := k.passive(ctx)
	if err != nil || frames < restartFrames {
		return err
	}
	for range 4 { // each pass copies what was appended during the one before
		next, err := k.passive(ctx)
		if err != nil {
			return err
		}
		appended := next - frames
		frames = next
		if appended < restartFrames/4 {
			break
		}
	}
	select {
	case k.c.writer <- struct{}{}:
	case <-k.stop:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-k.c.writer }()
	_, err = k.passive(ctx)
	return err
}

// restartFrames is the WAL length, in pages, past which a pass has the WAL start over.
const restartFrames = 1024

// passive runs one PASSIVE checkpoint and answers the WAL's length in frames.
func (k *checkpointer) passive(ctx context.Context) (frames int64, err error) {
	var busy, copied int64
	err = k.c.raw.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	return frames, err
}

func (k *checkpointer) close() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.stopped
}
