package webhooks

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

type countingRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (c *countingRecorder) WebhookDelivery(outcome string, step int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, outcome+"@"+strconv.Itoa(step))
}

// TestI14_DeliveryMetrics: every attempt is reported by outcome and ladder step: a receiver
// failing 503 walks the ladder as "failed" at steps 1 to 6 and "dead" at step 7; a healthy
// one is "delivered" at step 1.
func TestI14_DeliveryMetrics(t *testing.T) {
	rec := &countingRecorder{}
	h := newHarness(t, func(c *Config) { c.Metrics = rec })
	h.register("acc_1")
	h.rcv.setStatus(503)
	h.notify(jobEvent("acc_1", "photo_k1", "photo", JobFailed))
	h.sweepEvery(t0, t0.Add(48*time.Hour))
	want := []string{"failed@1", "failed@2", "failed@3", "failed@4", "failed@5", "failed@6", "dead@7"}
	if got := rec.seen; !slices.Equal(got, want) {
		t.Fatalf("ladder reported %v, want %v", got, want)
	}
	rec.seen = nil
	h.rcv.setStatus(200)
	h.notify(jobEvent("acc_1", "photo_k2", "photo", JobSucceeded))
	h.sweep(t0.Add(49 * time.Hour))
	if len(rec.seen) != 1 || rec.seen[0] != "delivered@1" {
		t.Fatalf("healthy delivery reported %v", rec.seen)
	}
}
