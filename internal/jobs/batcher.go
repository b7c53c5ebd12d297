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
// batcher (closeJobs). While its Run is not running (before the engine starts, after it stops)
// add refuses, and the caller writes its item alone.
type batcher[T any] struct {
	cfg   BatchConfig
	key   func(T) string // two items of one key never share a batch
	write func([]T)

	mu      sync.Mutex
	running bool
	pending []T
	wake    chan struct{}
}

func newBatcher[T any](cfg BatchConfig, key func(T) string, write func([]T)) *batcher[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultBatchConfig().MaxBatch
	}
	return &batcher[T]{cfg: cfg, key: key, write: write, wake: make(chan struct{}, 1)}
}

// Run writes batches until ctx ends, then writes what is still pending and returns.
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
			b.drain()
			return nil
		case <-b.wake:
		}
		// Before taking a batch, let the goroutines ready to run take their turn: on a busy
		// machine they are callers about to join it. With nothing else ready this returns at
		// once.
		runtime.Gosched()
		b.drain()
	}
}

// add queues item for the running batcher and reports whether it did; false when none runs.
func (b *batcher[T]) add(item T) bool {
	b.mu.Lock()
	if !b.running {
		b.mu.Unlock()
		return false
	}
	b.pending = append(b.pending, item)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return true
}

// drain writes batches until none is pending.
func (b *batcher[T]) drain() {
	for batch := b.take(); batch != nil; batch = b.take() {
		b.write(batch)
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
