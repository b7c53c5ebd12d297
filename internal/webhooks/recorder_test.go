package webhooks

import (
	"context"
	"sync"
	"testing"
)

// countingStore counts the record transactions a MemStore is asked for.
type countingStore struct {
	*MemStore
	mu      sync.Mutex
	batches []AttemptBatch
}

func (c *countingStore) RecordAttempts(ctx context.Context, b AttemptBatch) (BatchRecorded, error) {
	c.mu.Lock()
	c.batches = append(c.batches, b)
	c.mu.Unlock()
	return c.MemStore.RecordAttempts(ctx, b)
}

// WH-50 / the attempt recorder: the attempts the engine's senders finish at one moment (three
// endpoints, sent in parallel) are recorded in one transaction with their host's count, and
// each endpoint's state comes back to its sender.
func TestAttemptsRecordedTogether(t *testing.T) {
	var store *countingStore
	h := newHarness(t, func(c *Config) {
		store = &countingStore{MemStore: c.Store.(*MemStore)}
		c.Store = store
	})
	eps := []Endpoint{h.register("acc_1"), h.register("acc_1"), h.register("acc_1")}
	h.notify(jobEvent("acc_1", "photo_r1", "photo", JobSucceeded))
	pause := h.svc.Engine().recorder.Hold()
	swept := make(chan SweepStats)
	go func() {
		s, err := h.svc.Engine().RunOnce(h.ctx, t0)
		if err != nil {
			t.Error(err)
		}
		swept <- s
	}()
	pause.Await(len(eps))
	pause.Release()
	st := <-swept
	if st.Delivered != len(eps) || len(h.rcv.events()) != len(eps) {
		t.Fatalf("sweep %+v, %d arrived", st, len(h.rcv.events()))
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.batches) != 1 {
		t.Fatalf("%d record transactions, want 1: %+v", len(store.batches), store.batches)
	}
	b := store.batches[0]
	if len(b.Attempts) != len(eps) || len(b.Hosts) != 1 || b.Hosts[0].Attempts != len(eps) || b.Hosts[0].Failures != 0 {
		t.Fatalf("batch %+v", b)
	}
	for _, ep := range eps {
		if got := h.endpoint(ep.ID); got.LastSuccessAt == nil || got.ConsecutiveFailures != 0 {
			t.Fatalf("endpoint after the batch %+v", got)
		}
	}
}
