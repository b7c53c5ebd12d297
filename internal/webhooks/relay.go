package webhooks

import (
	"context"
	"log/slog"
	"time"
)

// OutboxEvent is one row of the jobs events outbox: a settled job's outcome, written in the
// settling transaction.
type OutboxEvent struct {
	Seq       int64
	Account   string
	ID        string // evt_<job id>_<status>
	JobID     string
	RequestID string
	Type      string // job.succeeded, job.failed, job.cancelled
	Product   string
	Status    string // succeeded, failed, cancelled
	ErrorCode string // "" on success
	Charged   int64
	Reserved  int64
	Webhook   string // the per-request URL named on the submit; "" when none
	CreatedAt time.Time
}

// Outbox is the events outbox the relay drains.
type Outbox interface {
	// Pending returns up to limit events not yet fanned out, oldest (lowest Seq) first: those
	// something may receive, a per-request webhook or an endpoint of the account in any state
	// (an event of an account without endpoints whose job named no webhook has no one to go to).
	Pending(ctx context.Context, limit int) ([]OutboxEvent, error)
	// MarkFannedOut records that the events with these sequence numbers were handed to Notify.
	MarkFannedOut(ctx context.Context, seqs []int64) error
}

// Notifier is what the relay hands events to (Service.Notify).
type Notifier interface {
	Notify(ctx context.Context, ev JobEvent) ([]string, error)
}

// Relay moves settled jobs from the outbox into deliveries. Notify is idempotent (delivery
// ids are deterministic), so a crash between Notify and MarkFannedOut only notifies again.
type Relay struct {
	Outbox   Outbox
	Notify   Notifier
	Interval time.Duration // between polls; 1 s when zero
	Batch    int           // events per poll; 200 when zero
	Logger   *slog.Logger  // nil: discard
	wake     chan struct{} // set by NewRelay
}

// NewRelay returns a relay polling outbox every second.
func NewRelay(outbox Outbox, n Notifier, log *slog.Logger) *Relay {
	return &Relay{Outbox: outbox, Notify: n, Logger: log, wake: make(chan struct{}, 1)}
}

// JobEventOf turns an outbox row into the event Notify takes. Chat events are marked so that
// Notify delivers nothing.
func JobEventOf(e OutboxEvent) JobEvent {
	charged, reserved := e.Charged, e.Reserved
	// The queue request id is the id the gateway gave the request: fal-style receivers read
	// both fields.
	ev := JobEvent{JobID: e.JobID, RequestID: e.RequestID, GatewayRequestID: e.RequestID, Account: e.Account, Product: e.Product, Status: e.Status,
		CreditsCharged: &charged, CreditsReserved: &reserved, SettledAt: e.CreatedAt, Chat: e.Product == ProductChat,
		CallbackURL: e.Webhook}
	if e.ErrorCode != "" {
		code := e.ErrorCode
		ev.ErrorCode = &code
	}
	return ev
}

func (r *Relay) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// RunOnce drains the outbox: batches of pending events are notified and marked until none is
// left. An event whose status is not a settled one is marked without a delivery (it can never
// become one); a Notify error stops the pass with the event left pending for the next.
// Returns how many events were marked.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = 200
	}
	total := 0
	for {
		evs, err := r.Outbox.Pending(ctx, batch)
		if err != nil || len(evs) == 0 {
			return total, err
		}
		var done []int64
		var notifyErr error
		// The batch's settled events go to Notify together (one endpoint read per account
		// when the notifier takes a batch), in order; an event that can never be delivered
		// is marked without one.
		var evsOK []JobEvent
		var seqs []int64
		for _, e := range evs {
			ev := JobEventOf(e)
			if _, err := ev.EventType(); err != nil && !ev.Chat {
				r.logger().Error("webhooks: outbox event has no settled status; skipped", "event", e.ID, "status", e.Status)
				done = append(done, e.Seq)
				continue
			}
			evsOK = append(evsOK, ev)
			seqs = append(seqs, e.Seq)
		}
		n, err := r.notifyAll(ctx, evsOK)
		done = append(done, seqs[:n]...)
		notifyErr = err
		if len(done) > 0 {
			if err := r.Outbox.MarkFannedOut(ctx, done); err != nil {
				return total, err
			}
			total += len(done)
		}
		if notifyErr != nil {
			return total, notifyErr
		}
		if len(evs) < batch {
			return total, nil
		}
	}
}

// BatchNotifier is a Notifier that takes a batch at once (Service.NotifyAll).
type BatchNotifier interface {
	NotifyAll(ctx context.Context, evs []JobEvent) (int, error)
}

// notifyAll hands evs to the notifier in order and answers how many it took before an error.
func (r *Relay) notifyAll(ctx context.Context, evs []JobEvent) (int, error) {
	if b, ok := r.Notify.(BatchNotifier); ok {
		return b.NotifyAll(ctx, evs)
	}
	for i, ev := range evs {
		if _, err := r.Notify.Notify(ctx, ev); err != nil {
			return i, err
		}
	}
	return len(evs), nil
}

// Wake asks a running Run loop to poll now.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}: // a nil channel (a Relay not from NewRelay) never wakes
	default:
	}
}

// Run polls the outbox at once, then every Interval (or on Wake), until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	iv := r.Interval
	if iv <= 0 {
		iv = time.Second
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.logger().Error("webhooks: outbox relay", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.wake:
		}
	}
}
