// Package batch writes the items that wait at one moment together: an engine part that a
// service starts under its Run (the jobs engine's submit and settle batchers, the webhook
// engine's attempt recorder).
package batch

import (
	"context"
	"runtime"
	"sync"
)

// Config configures one batcher.
type Config struct {
	// MaxBatch bounds the items written together.
	MaxBatch int
	// InFlight bounds the batches written at once. One lets the next batch gather while one is
	// written; a store that merges concurrent transactions itself (SQLite's group commit)
	// wants a few.
	InFlight int
}

// DefaultConfig is a batcher as shipped.
func DefaultConfig() Config { return Config{MaxBatch: 64, InFlight: 1} }

// Batcher gathers the items that wait at one moment and hands them to write together: a batch
// costs the database about what one item costs, since each statement and each COMMIT costs more
// than the rows it writes. An item that finds the batcher idle is written at once on its caller's
// goroutine, a batch of one, with no hand-off to wait for; the items that arrive while a batch
// is being written wait and go together in the next. While its Run is not running (before the
// engine starts, after it stops) every item is written alone.
type Batcher[T any] struct {
	cfg   Config
	key   func(T) string // two items of one key never share a batch
	write func([]T)

	mu      sync.Mutex
	running bool
	writing int // batches being written
	pending []T
	wake    chan struct{}
}

// New returns a batcher that hands batches to write; two items whose key is equal never share
// a batch. write answers each item itself (through the item).
func New[T any](cfg Config, key func(T) string, write func([]T)) *Batcher[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultConfig().MaxBatch
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultConfig().InFlight
	}
	return &Batcher[T]{cfg: cfg, key: key, write: write, wake: make(chan struct{}, 1)}
}

// Run writes the batches that gather while others are written until ctx ends, then writes what
// is still pending and returns.
func (b *Batcher[T]) Run(ctx context.Context) error {
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

// Do writes item: alone and at once when the batcher is idle or not running, otherwise with the
// items waiting when the batch being written ends. The caller awaits the item's own answer.
func (b *Batcher[T]) Do(item T) {
	b.mu.Lock()
	if b.running && b.writing >= b.cfg.InFlight {
		b.pending = append(b.pending, item)
		b.mu.Unlock()
		return
	}
	lead := b.running
	if lead {
		b.writing++
	}
	b.mu.Unlock()
	b.write([]T{item})
	if lead {
		b.release()
	}
}

// lead counts a batch as being written, unless as many as may be are.
func (b *Batcher[T]) lead() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writing >= b.cfg.InFlight {
		return false
	}
	b.writing++
	return true
}

// release counts a batch written and wakes Run when items wait.
func (b *Batcher[T]) release() {
	b.mu.Lock()
	b.writing--
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
func (b *Batcher[T]) take() []T {
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

// Pause holds the items given to a batcher unwritten, as if its Run were busy, so a test can
// gather a batch of its choosing. Call it while the batcher's Run is not running.
type Pause[T any] struct{ b *Batcher[T] }

// Hold pauses b until Release.
func (b *Batcher[T]) Hold() Pause[T] {
	b.mu.Lock()
	b.running, b.writing = true, b.cfg.InFlight
	b.mu.Unlock()
	return Pause[T]{b}
}

// Await returns once n items wait.
func (p Pause[T]) Await(n int) {
	for {
		p.b.mu.Lock()
		waiting := len(p.b.pending)
		p.b.mu.Unlock()
		if waiting >= n {
			return
		}
		runtime.Gosched() // the items' goroutines are queueing; no outcome depends on time
	}
}

// Release writes the items waiting, as one batch when they fit in one; later items are written
// alone.
func (p Pause[T]) Release() {
	p.b.mu.Lock()
	p.b.running, p.b.writing = false, 0
	p.b.mu.Unlock()
	go func() {
		for batch := p.b.take(); batch != nil; batch = p.b.take() {
			p.b.write(batch)
		}
	}()
}
