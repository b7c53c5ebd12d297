package jobs

import (
	"context"
	"runtime"
	"sync"
)

// BatchConfig configures the submit batcher.
type BatchConfig struct {
	// MaxBatch bounds the submits charged in one transaction.
	MaxBatch int
}

// DefaultBatchConfig is the submit batcher as shipped.
func DefaultBatchConfig() BatchConfig { return BatchConfig{MaxBatch: 64} }

// submitBatcher gathers the submits that wait at one moment into one transaction
// (chargeSubmits): a batch costs the database about what one submit costs, since each
// statement and each COMMIT costs more than the rows it writes. While its Run is not running
// (before the engine starts, after it stops) every submit is its own batch, on its caller's
// goroutine.
type submitBatcher struct {
	cfg   BatchConfig
	write func([]*pendingSubmit)

	mu      sync.Mutex
	running bool
	pending []*pendingSubmit
	wake    chan struct{}
}

func newSubmitBatcher(cfg BatchConfig, write func([]*pendingSubmit)) *submitBatcher {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultBatchConfig().MaxBatch
	}
	return &submitBatcher{cfg: cfg, write: write, wake: make(chan struct{}, 1)}
}

// Run writes batches until ctx ends, then writes what is still pending and returns.
func (b *submitBatcher) Run(ctx context.Context) error {
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
		// machine they are submits about to join it. With nothing else ready this returns at
		// once.
		runtime.Gosched()
		b.drain()
	}
}

// drain writes batches until none is pending.
func (b *submitBatcher) drain() {
	for batch := b.take(); batch != nil; batch = b.take() {
		b.write(batch)
	}
}

// submit hands p to the running batcher, or writes it alone when none runs, and returns once
// p is answered.
func (b *submitBatcher) submit(p *pendingSubmit) {
	b.mu.Lock()
	if !b.running {
		b.mu.Unlock()
		b.write([]*pendingSubmit{p})
		return
	}
	b.pending = append(b.pending, p)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	// Once queued, the answer is awaited whatever the caller's context: the batch may commit
	// the job.
	<-p.done
}

// take removes the next batch from the pending submits; a submit whose account and
// idempotency key are already in it waits for the next.
func (b *submitBatcher) take() []*pendingSubmit {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return nil
	}
	var batch, rest []*pendingSubmit
	seen := map[[2]string]bool{}
	for _, p := range b.pending {
		k := [2]string{p.base.AccountID, p.base.IdempotencyKey}
		if len(batch) == b.cfg.MaxBatch || seen[k] {
			rest = append(rest, p)
			continue
		}
		seen[k] = true
		batch = append(batch, p)
	}
	b.pending = rest
	return batch
}
