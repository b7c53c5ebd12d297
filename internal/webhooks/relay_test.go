package webhooks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// memOutbox is an in-memory Outbox.
type memOutbox struct {
	mu     sync.Mutex
	events []OutboxEvent
	marked map[int64]bool
	onMark chan struct{} // signalled after each mark when set
}

func (o *memOutbox) add(e OutboxEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e.Seq = int64(len(o.events) + 1)
	o.events = append(o.events, e)
}

func (o *memOutbox) Pending(_ context.Context, limit int) ([]OutboxEvent, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []OutboxEvent
	for _, e := range o.events {
		if !o.marked[e.Seq] && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (o *memOutbox) MarkFannedOut(_ context.Context, seqs []int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.marked == nil {
		o.marked = map[int64]bool{}
	}
	for _, s := range seqs {
		o.marked[s] = true
	}
	if o.onMark != nil {
		select {
		case o.onMark <- struct{}{}:
		default:
		}
	}
	return nil
}

// failingNotifier fails for one job id and records the rest.
type failingNotifier struct {
	inner Notifier
	fail  string
	seen  []string
}

func (f *failingNotifier) Notify(ctx context.Context, ev JobEvent) ([]string, error) {
	if ev.JobID == f.fail {
		return nil, errors.New("store down")
	}
	f.seen = append(f.seen, ev.JobID)
	return f.inner.Notify(ctx, ev)
}

func outboxEvent(job, product, status, webhook string) OutboxEvent {
	return OutboxEvent{Account: "acc", ID: "evt_" + job + "_" + status, JobID: job, RequestID: "req_" + job, Type: "job." + status,
		Product: product, Status: status, Charged: 2, Reserved: 3, Webhook: webhook, CreatedAt: t0}
}

// TestWH26_RelayFansOutOutbox: the relay hands every settled job of the outbox to Notify in
// order, in batches, marks them, delivers chat nothing, skips (and marks) a row with no settled
// status, and leaves a row whose Notify failed pending for the next pass; rerunning after a
// crash between Notify and the mark enqueues nothing twice. Proves WH-26, WH-27, WH-28 at the
// relay.
func TestWH26_RelayFansOutOutbox(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc")
	ob := &memOutbox{}
	ob.add(outboxEvent("photo_1", "photo", JobSucceeded, ""))
	ob.add(outboxEvent("chat_2", ProductChat, JobSucceeded, h.rcv.URL()))
	ob.add(outboxEvent("music_3", "music", "weird", ""))
	ob.add(outboxEvent("photo_4", "photo", JobFailed, ""))
	ob.add(outboxEvent("photo_5", "photo", JobCancelled, h.rcv.URL()))
	n := &failingNotifier{inner: h.svc, fail: "photo_4"}
	r := NewRelay(ob, n, nil)
	r.Batch = 2
	marked, err := r.RunOnce(h.ctx)
	if err == nil || marked != 3 || !slices.Equal(n.seen, []string{"photo_1", "chat_2"}) {
		t.Fatalf("first pass: %d marked, %v seen, err %v", marked, n.seen, err)
	}
	n.fail = ""
	if marked, err := r.RunOnce(h.ctx); err != nil || marked != 2 {
		t.Fatalf("second pass: %d %v", marked, err)
	}
	ds, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{Account: "acc"})
	var got []string
	for _, d := range ds {
		got = append(got, d.EventID+"@"+d.EndpointID)
	}
	want := []string{"evt_photo_1_succeeded@" + ep.ID, "evt_photo_4_failed@" + ep.ID, "evt_photo_5_cancelled@" + ep.ID, "evt_photo_5_cancelled@"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
	// A crash before the mark: the same rows again enqueue nothing new.
	ob.marked = nil
	if _, err := r.RunOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	if again, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{Account: "acc"}); len(again) != len(ds) {
		t.Fatalf("re-notified rows enqueued %d deliveries, had %d", len(again), len(ds))
	}
	// The row's fields reach the event.
	ev := JobEventOf(outboxEvent("photo_9", "photo", JobFailed, "https://cb.example/x"))
	if ev.CallbackURL != "https://cb.example/x" || *ev.CreditsCharged != 2 || *ev.CreditsReserved != 3 || ev.ErrorCode != nil || ev.Chat ||
		ev.EventID() != "evt_photo_9_failed" || !ev.SettledAt.Equal(t0) {
		t.Fatalf("event %+v", ev)
	}
}

// Run polls at once and stops with its context.
func TestWH26_RelayRunStops(t *testing.T) {
	h := newHarness(t)
	ob := &memOutbox{onMark: make(chan struct{}, 1)}
	ob.add(outboxEvent("photo_1", "photo", JobSucceeded, ""))
	r := NewRelay(ob, h.svc, nil)
	r.Interval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	r.Wake()
	select {
	case <-ob.onMark:
	case <-time.After(10 * time.Second):
		t.Fatal("Run never drained the outbox")
	}
	if p, _ := ob.Pending(ctx, 10); len(p) != 0 {
		t.Fatalf("left pending %v", p)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
