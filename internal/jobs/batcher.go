package jobs

import (
	"context"
	"runtime"
	"sync"
)

// BatchConfig configures one of the engine's batchers.
type BatchConfig struct {
	// MaxBatch bounds the items written together.
	MaxBatch int
}

// DefaultBatchConfig is a batcher as shipped.
func DefaultBatchConfig() BatchConfig { return BatchConfig{MaxBatch: 64} }

// batcher gathers the items that wait at one moment and hands them to write together: a batch
// costs the database about what one item costs, since each statement and each COMMIT costs more
// than the rows it writes. The engine has two: the submit batcher (chargeSubmits) and the settle
// batcher (closeJobs). An item that finds the batcher idle is written at once on its caller's
// goroutine, a batch of one, with no hand-off to wait for; the items that arrive while a batch
// is being written wait and go together in the next. While its Run is not running (before the
// engine starts, after it stops) every item is written alone.
type batcher[T any] struct {
	cfg   BatchConfig
	key   func(T) string // two items of one key never share a batch
	write func([]T)

	mu      sync.Mutex
	running bool
	busy    bool // a batch is being written
	pending []T
	wake    chan struct{}
}

func newBatcher[T any](cfg BatchConfig, key func(T) string, write func([]T)) *batcher[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultBatchConfig().MaxBatch
	}
	return &batcher[T]{cfg: cfg, key: key, write: write, wake: make(chan struct{}, 1)}
}

// Run writes the batches that gather while others are written until ctx ends, then writes what
// is still pending and returns.
func (b *batcher[T]) Run(ctx context.Context) error {
	b.mu.Lock()
	b.running = true
	b.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			b.mu.Lock()
			b.running = false
			b.mu.Unlock()
			for batch := b.take(); batch != nil; batch = b.take() {
				b.write(batch)
			}
			return nil
		case <-b.wake:
		}
		// Before taking a batch, let the goroutines ready to run take their turn: on a busy
		// machine they are callers about to join it. With nothing else ready this returns at
		// once.
		runtime.Gosched()
		for b.lead() {
			batch := b.take()
			if batch != nil {
				b.write(batch)
			}
			b.release()
			if batch == nil {
				break
			}
		}
	}
}

// do writes item: alone and at once when the batcher is idle or not running, otherwise with the
// items waiting when the batch being written ends. The caller awaits the item's own answer.
func (b *batcher[T]) do(item T) {
	b.mu.Lock()
	if b.running && b.busy {
		b.pending = append(b.pending, item)
		b.mu.Unlock()
		return
	}
	lead := b.running
	b.busy = lead
	b.mu.Unlock()
	b.write([]T{item})
	if lead {
		b.release()
	}
}

// lead marks a batch as being written, unless one is.
func (b *batcher[T]) lead() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy {
		return false
	}
	b.busy = true
	return true
}

// release marks the batch written and wakes Run when items wait.
func (b *batcher[T]) release() {
	b.mu.Lock()
	b.busy = false
	more := len(b.pending) > 0
	b.mu.Unlock()
	if more {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// take removes the next batch from the pending items; an item whose key is already in it waits
// for the next.
func (b *batcher[T]) take() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return nil
	}
	var batch, rest []T
	seen := map[string]bool{}
	for _, it := range b.pending {
		k := b.key(it)
		if len(batch) == b.cfg.MaxBatch || seen[k] {
			rest = append(rest, it)
			continue
		}
		seen[k] = true
		batch = append(batch, it)
	}
	b.pending = rest
	return batch
}
