package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
)

// A submit's transaction. Every submit is charged and recorded by chargeSubmits, alone or with
// the submits waiting at the same moment (the submit batcher, internal/batch): a batch of one is
// the alone case. The transaction holds the submits' accounts (ledger.Service.Hold), counts
// their jobs in flight and the jobs waiting for their models, judges each submit in the order
// of checks (ledger.Judge) on the accounts as the submits before it left them, places it (a
// runner's slot, the queue, or a hand-off to a worker), and writes every charge and every job.
//
// A refusal is the submit's own: the others of its batch are written. When the transaction
// fails, none of it was written and each submit of it runs again alone (errAlone), where a
// taken idempotency key is answered as a replay.

// pendingSubmit is one submit on its way through a transaction, and its outcome.
type pendingSubmit struct {
	ctx  context.Context
	req  SubmitRequest
	base Job // the job as Submit made it
	done chan struct{}

	job     Job   // the job as charged and placed
	balance int64 // the balance the account was left with
	claimed bool  // a runner's slot is held for it
	err     error // its refusal, or errAlone
}

// errAlone sends a submit whose batch failed to a transaction of its own.
var errAlone = errors.New("jobs: the batch failed; the submit runs alone")

// errAdmission marks a failure of a read the admission check needs (the accounts held, the jobs
// in flight or waiting): the check could not run, nothing was charged (503 service_busy,
// ERR-55), unlike a failure of the charge's own write (credit_reserve_failed).
var errAdmission = errors.New("jobs: the admission check could not run")

// admission marks err, from a read the admission check needs, as errAdmission; a catalogued
// refusal stays as it is.
func admission(err error) error {
	if _, ok := apierr.As(err); ok {
		return err
	}
	return fmt.Errorf("%w: %w", errAdmission, err)
}

// submit charges and records job, through the submit batcher when together is set, alone
// otherwise, and answers once its transaction ended.
func (s *Service) submit(ctx context.Context, r SubmitRequest, job Job, together bool) *pendingSubmit {
	p := &pendingSubmit{ctx: ctx, req: r, base: job, done: make(chan struct{})}
	if together {
		s.submits.Do(p)
	} else {
		s.writeSubmits([]*pendingSubmit{p})
	}
	// Once queued, the answer is awaited whatever the caller's context: the batch may commit
	// the job.
	<-p.done
	return p
}

// writeSubmits charges and records batch in one transaction and answers each submit of it. A
// submit whose caller gave up before its turn is answered so, unwritten.
func (s *Service) writeSubmits(batch []*pendingSubmit) {
	live := make([]*pendingSubmit, 0, len(batch))
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			close(p.done)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	ctxs := make([]context.Context, len(live))
	for i, p := range live {
		ctxs[i] = p.ctx
	}
	ctx, cancel := batchContext(ctxs)
	defer cancel()
	err := s.inTxRecovered(ctx, func(tx Tx) error { return s.chargeSubmits(ctx, tx, live) })
	for _, p := range live {
		if err != nil {
			s.unclaim(p, true)
			p.err = err
			if len(live) > 1 {
				p.err = errAlone
			}
		}
		close(p.done)
	}
}

// chargeSubmits is the transaction of a batch of submits. The store may run it again (a
// retried transaction): each run starts from the jobs as Submit made them and gives back the
// slots the run before claimed.
func (s *Service) chargeSubmits(ctx context.Context, tx Tx, batch []*pendingSubmit) (err error) {
	// A failed transaction gives its slots back at once, not after the COMMIT: the store may
	// commit several transactions together (SQLite's group commit), and submits waiting for
	// that COMMIT must not hold slots that others could start on.
	defer func() {
		if err != nil {
			for _, p := range batch {
				s.unclaim(p, true)
			}
		}
	}()
	now := s.now()
	pairs := make([]ledger.AccountKey, len(batch))
	var models, capped []string
	for i, p := range batch {
		s.unclaim(p, false)
		p.job, p.balance, p.err = p.base, 0, nil
		pairs[i] = ledger.AccountKey{AccountID: p.base.AccountID, KeyID: p.base.KeyID}
		if queues(p.req.Model) || !s.cfg.Runs {
			models = append(models, p.base.Model)
		}
		if !queues(p.req.Model) && !s.cfg.Runs {
			// handOff's service_busy is judged on this count, which every front process's
			// submits share: it is taken under the model's lock, or two fronts that each count
			// before the other commits hand off more than one worker runs at once. A process
			// that runs the model judges its own slots and takes no lock.
			capped = append(capped, p.base.Model)
		}
	}
	queued := map[string]Waiting{}
	if len(models) > 0 {
		if queued, err = tx.CountQueuedOf(ctx, sortedSet(models), sortedSet(capped)); err != nil {
			return admission(err)
		}
	}
	held, err := s.ledger.Hold(ctx, tx, pairs, now)
	if err != nil {
		return admission(err)
	}
	if queued == nil {
		queued = map[string]Waiting{}
	}
	written := make([]Job, 0, len(batch))
	for _, p := range batch {
		if p.err = s.place(held, p, queued, now); p.err != nil {
			continue
		}
		held.Placed(p.job.AccountID)
		written = append(written, p.job)
	}
	if err := held.Write(ctx, tx); err != nil {
		return err
	}
	if len(written) == 0 {
		return nil
	}
	// A failed insert rolls the charges back with it: retrying with the same idempotency key
	// is safe (job_record_failed).
	if err := tx.InsertJobs(ctx, written); err != nil && !errors.Is(err, ErrDuplicate) && !errors.Is(err, ErrNotRecorded) {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	} else if err != nil {
		return err
	}
	return nil
}

// place judges one submit on the accounts held and places its job: started on a runner's slot
// of this process and charged, waiting in its model's queue (charged at its turn), or, in a
// process that runs no job, charged and handed off to a worker.
func (s *Service) place(held *ledger.Held, p *pendingSubmit, queued map[string]Waiting, now time.Time) error {
	j := &p.job
	limit := -1
	if a, ok := held.Account(j.AccountID); ok {
		if n, ok := s.cfg.InFlight[a.Plan]; ok {
			limit = n
		}
	}
	r := ledger.Request{Job: ledger.Job{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.ID, Model: j.Model, Quote: ledger.Credits(j.Quoted)},
		CoveredOnly: p.req.CoveredOnly, InFlightLimit: limit}
	v, err := held.Judge(r)
	if err != nil {
		return err
	}
	j.Coverage = v.Coverage
	if !s.cfg.Runs {
		return s.handOff(held, p, r, v, queued, now)
	}
	m := p.req.Model
	waiting := 0
	if queues(m) {
		waiting = queued[m.Slug].Ahead(j.Priority) // a newcomer never overtakes a job it would wait behind
	}
	if waiting == 0 && s.claimSlot(m.Slug) {
		p.claimed = true
		c := held.Take(r, v)
		j.Reserved, j.Charged = int64(c.Reserved), int64(c.Reserved)
		s.started(j, c, now)
		p.balance = int64(c.Balance)
		return nil
	}
	if !queues(m) {
		return apierr.New(apierr.ServiceBusy).WithRetryAfter(1)
	}
	if err := enqueue(p, waiting, time.Duration(m.Lifecycle.MaxWaitSeconds)*time.Second); err != nil {
		return err
	}
	addWaiting(queued, m.Slug, j.Priority)
	a, _ := held.Account(j.AccountID)
	p.balance = a.Balance
	return nil
}

// handOff places a submit in a process that runs no job (no worker role): the job is charged
// now, as a submit that starts at once would be, and waits IN_QUEUE for a worker, which starts
// it without charging again (Reserved > 0); a pass is used only when the job starts, as for any
// queued job. Nothing here claims a local slot.
//
// service_busy is judged on the shared queue, since this process cannot see the workers'
// slots: a model that refuses a queue is busy while as many hand-offs of it wait as one worker
// runs at once (its concurrency), and each hand-off of such a model waits at most HandOffWait
// for a worker before it fails request_timeout, refunded. A model that queues keeps its own
// rules (max_queue_length, its longest wait).
func (s *Service) handOff(held *ledger.Held, p *pendingSubmit, r ledger.Request, v ledger.Verdict, queued map[string]Waiting, now time.Time) error {
	m, j := p.req.Model, &p.job
	waiting := queued[m.Slug].Ahead(j.Priority)
	wait := time.Duration(m.Lifecycle.MaxWaitSeconds) * time.Second
	if !queues(m) {
		if queued[m.Slug].All() >= s.concurrency(m.Slug) {
			return apierr.New(apierr.ServiceBusy).WithRetryAfter(1)
		}
		wait = s.cfg.HandOffWait
	}
	if err := enqueue(p, waiting, wait); err != nil {
		return err
	}
	addWaiting(queued, m.Slug, j.Priority)
	a, _ := held.Account(j.AccountID)
	p.balance = a.Balance
	if !v.Coverage.Covered() {
		c := held.Take(r, v)
		j.Reserved, j.Charged = int64(c.Reserved), int64(c.Reserved)
		bal := int64(c.Balance)
		j.BalanceAfter, p.balance = &bal, bal
	}
	return nil
}

// addWaiting counts a job of priority p just queued for model in queued, so that the next
// submits of the same batch wait behind it.
func addWaiting(queued map[string]Waiting, model string, p Priority) {
	w := queued[model]
	w.Add(p)
	queued[model] = w
}

// enqueue puts a submit in its model's queue behind waiting others (those it does not
// overtake, Waiting.Ahead): refused past the caller's max_queue_length, and given up
// (request_timeout) past wait or, on a model that queues, the caller's own timeout. A model
// that refuses a queue waits only as a hand-off, whose wait for a worker (HandOffWait) the
// caller's timeout does not shorten: X-Svc-Request-Timeout has nothing to bound there (spec 01,
// submit options).
func enqueue(p *pendingSubmit, waiting int, wait time.Duration) error {
	r := p.req
	if r.MaxQueueLength != nil && waiting > *r.MaxQueueLength {
		return apierr.New(apierr.QueueTooLong, "waiting", waiting, "max", *r.MaxQueueLength)
	}
	if r.RequestTimeout > 0 && queues(r.Model) && (wait == 0 || r.RequestTimeout < wait) {
		wait = r.RequestTimeout
	}
	if wait > 0 {
		t := p.job.CreatedAt.Add(wait) // the wait counts from the request
		p.job.StartBy = &t
	}
	p.job.Status = InQueue
	return nil
}

// queues reports whether m offers a queue.
func queues(m *catalog.Model) bool { return m.Lifecycle.Queue == catalog.QueueOffers }

// started moves a job that c charged to IN_PROGRESS under this process's lease.
func (s *Service) started(j *Job, c ledger.Charged, now time.Time) {
	bal := int64(c.Balance)
	j.BalanceAfter = &bal
	lease := now.Add(s.cfg.LeaseTTL)
	j.Status, j.StartedAt, j.LeaseOwner, j.LeaseUntil = InProgress, &now, s.cfg.Owner, &lease
	j.Attempts++
	j.ProviderJobID = j.RequestID
}

// unclaim gives back the runner's slot p holds, if any: released (waking the sweep of a model
// that queues) when p is refused, given back quietly when its transaction runs again.
func (s *Service) unclaim(p *pendingSubmit, release bool) {
	if !p.claimed {
		return
	}
	if release {
		s.releaseSlot(p.base.Model)
	} else {
		s.giveSlot(p.base.Model)
	}
	p.claimed = false
}

// inTxRecovered is InTx where a panic would end the process (a batcher's goroutine): it is
// logged and answered as the transaction's failure (the store rolled it back).
func (s *Service) inTxRecovered(ctx context.Context, fn func(Tx) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("jobs: submit transaction panicked", "panic", v)
			err = fmt.Errorf("jobs: submit transaction panicked: %v", v)
		}
	}()
	return s.store.InTx(ctx, fn)
}

// batchContext is a batch's context: it ends at the latest of its callers' deadlines, if they
// all have one. No caller's cancellation ends it: the others' work is in the same statement.
func batchContext(ctxs []context.Context) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range ctxs {
		d, ok := c.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// sortedSet is xs sorted without repeats.
func sortedSet(xs []string) []string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return slices.Compact(xs)
}
