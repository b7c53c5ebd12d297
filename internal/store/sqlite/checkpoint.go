package sqlite

import (
	"context"
	"sync/atomic"
	"time"
)

// Checkpoints (SQLite). In WAL mode a COMMIT appends pages to the WAL, and by default the
// connection whose COMMIT passes a thousand pages copies them back into the database file
// there and then, on the time of the batch that committed (group.go), which every write
// waits for. This process's connections do not checkpoint on COMMIT (wal_autocheckpoint(0)
// in the DSN); this loop does, PASSIVE (it never blocks the writer, which goes on appending
// while it copies), every checkpointEvery while commits come. Another process on the same
// file (the CLI) checkpoints as SQLite does by default.

const checkpointEvery = 250 * time.Millisecond

// checkpointer copies the WAL into the database file in the background.
type checkpointer struct {
	c       *conn
	dirty   atomic.Bool // the WAL grew since the last pass
	stop    chan struct{}
	stopped chan struct{}
}

func newCheckpointer(c *conn) *checkpointer {
	k := &checkpointer{c: c, stop: make(chan struct{}), stopped: make(chan struct{})}
	go k.run()
	return k
}

// committed tells the loop that the WAL grew. It only sets a flag that the loop reads at its
// next tick: waking the loop's goroutine at every COMMIT would cost each batch a hand-off.
func (k *checkpointer) committed() { k.dirty.Store(true) }

func (k *checkpointer) run() {
	defer close(k.stopped)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if !k.dirty.Swap(false) {
			continue
		}
		// A failed pass (the file busy with another process's checkpoint) is retried at the
		// next tick; the WAL only grows meanwhile.
		if k.pass() != nil {
			k.dirty.Store(true)
		}
	}
}

// pass copies what the WAL holds into the database file, as far as readers allow.
//
// SQLite writes the WAL from its start again only when a write transaction begins with every
// frame already copied; otherwise it appends. A pass run beside busy batches never
// leaves it so (they append while the pass copies), and the WAL grew by the whole
// write load, about 100 MB a second at full speed, until the load paused. So once the WAL
// holds restartFrames, the pass copies again until what was appended meanwhile is short,
// and copies that last part holding the write lock: the next batch waits for a few hundred
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
