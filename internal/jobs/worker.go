package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
)

// Run drives the background work until ctx ends: heartbeats of this process's running jobs
// (and cancellations asked through other processes), queued jobs started as slots free up,
// queued jobs past their deadline failed request_timeout, and jobs whose owner died (lease run
// out) taken over. On return the running jobs are stopped without settling: their leases run
// out and they run again, so a crash or a restart loses no job (a language model's call, whose
// request no longer waits, settles failed and refunded instead: lostCall).
func (s *Service) Run(ctx context.Context) error {
	parts := make(chan error, 3)
	go func() { parts <- s.submits.Run(ctx) }()
	go func() { parts <- s.closes.Run(ctx) }()
	go func() { parts <- s.listen(ctx) }()
	defer func() { <-parts; <-parts; <-parts }()
	if !s.cfg.Runs {
		// Not a worker: the jobs this process hands off are run, renewed and swept by the
		// processes that run jobs. It still fails the hand-offs no worker started in time, so
		// their credits come back while no worker is up.
		sweep := time.NewTicker(s.cfg.SweepEvery)
		defer sweep.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-sweep.C:
				s.expireOverdue(ctx)
			}
		}
	}
	s.mu.Lock()
	s.base = context.WithoutCancel(ctx)
	s.mu.Unlock()
	hb := time.NewTicker(s.cfg.HeartbeatEvery)
	defer hb.Stop()
	sweep := time.NewTicker(s.cfg.SweepEvery)
	defer sweep.Stop()
	var poll <-chan time.Time
	if s.cfg.PollEvery > 0 {
		t := time.NewTicker(s.cfg.PollEvery)
		defer t.Stop()
		poll = t.C
	}
	s.Sweep(ctx)
	for {
		select {
		case <-poll:
			s.startAllQueued(ctx, true)
		case <-ctx.Done():
			s.stop()
			return nil
		case <-hb.C:
			s.heartbeat(ctx)
		case <-sweep.C:
			s.Sweep(ctx)
		case <-s.handoffs:
			// Another process handed a job off: look at every model's queue.
			s.startAllQueued(ctx, true)
		case <-s.wake:
			// A slot freed or a job queued here: only models that queue can have jobs waiting
			// for this process's own submits.
			s.startAllQueued(ctx, false)
		}
	}
}

// listen acts on the notices of every process until ctx ends; a notifier that fails is
// tried again a second later (the sweep and the waiters' polls cover the gap).
func (s *Service) listen(ctx context.Context) error {
	if s.notifier == nil {
		return nil
	}
	for {
		err := s.notifier.Listen(ctx, s.heard)
		if ctx.Err() != nil {
			return nil
		}
		s.quiet.warn(s.log, s.now(), "jobs: notices from other processes interrupted", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// stop ends this process's runs without settling them and gives their leases back at once,
// so the next process (or this one restarted) takes them over without waiting for the TTL:
// it runs them again, or settles a language model's call, whose caller was answered here or
// not at all (lostCall).
func (s *Service) stop() {
	s.mu.Lock()
	s.stopping = true
	ids := make([]string, 0, len(s.running))
	for id, rj := range s.running {
		ids = append(ids, id)
		rj.cancel(errStopping)
	}
	s.mu.Unlock()
	s.wg.Wait()
	if len(ids) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.store.Heartbeat(ctx, s.cfg.Owner, ids, s.now().Add(-time.Millisecond)); err != nil {
			s.log.Warn("give leases back", "err", err)
		}
	}
}

// Quiesce stops this process from taking work that waits in the database: it starts no
// queued or handed-off job and takes over no lost one, so a process that drains before it stops
// leaves them to the other processes' workers (whose sweeps look every SweepEvery). The jobs it
// runs run on, and its own submits still start here.
func (s *Service) Quiesce() { s.quiesced.Store(true) }

// Drain waits for the running jobs to settle (tests and graceful stops with time to spare).
func (s *Service) Drain() { s.wg.Wait() }

// Stopping reports whether the engine stopped taking work (its Run's context ended): a submit
// is still charged and recorded, and its job waits for another process.
func (s *Service) Stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

func (s *Service) heartbeat(ctx context.Context) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.running))
	for id := range s.running {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	cancel, err := s.store.Heartbeat(ctx, s.cfg.Owner, ids, s.now().Add(s.cfg.LeaseTTL))
	if err != nil {
		s.quiet.warn(s.log, s.now(), "heartbeat", "err", err)
		return
	}
	for _, id := range cancel {
		s.signalCancel(id)
	}
	for _, id := range ids {
		s.mu.Lock()
		rj := s.running[id]
		s.mu.Unlock()
		if rj == nil {
			continue
		}
		rj.mu.Lock()
		dirty, logs, progress := rj.dirty, append([]LogLine(nil), rj.logs...), rj.progress
		rj.dirty = false
		rj.mu.Unlock()
		if dirty {
			if err := s.store.AppendProgress(ctx, id, logs, progress); err != nil {
				s.quiet.warn(s.log, s.now(), "store progress", "err", err)
			}
		}
	}
}

// Sweep runs one pass of the background work.
func (s *Service) Sweep(ctx context.Context) {
	s.expireOverdue(ctx)
	if stale, err := s.store.Stale(ctx, s.now(), 50); err == nil {
		for _, j := range stale {
			s.takeOver(ctx, j)
		}
	}
	// The periodic sweep looks at every model: a process without the worker role hands off
	// jobs of models that refuse a queue too.
	s.startAllQueued(ctx, true)
}

// startAllQueued starts what waits while this process has slots: on every model (all), or only
// on the models that queue. Language models (chat turns, embeddings) are models too: a turn
// taken by a process without the worker role is handed off like any job.
func (s *Service) startAllQueued(ctx context.Context, all bool) {
	for _, m := range append(s.catalog.Models(), s.catalog.LanguageModels("")...) {
		if all || m.Lifecycle.Queue == catalog.QueueOffers {
			s.startQueued(ctx, m.Slug)
		}
	}
}

// takeOver runs again a job whose owner stopped heartbeating (crash or restart), for what its
// stall ceiling has left since its first start. A language model's job is not run again:
// lostCall settles it; nor is a job whose stall ceiling passed meanwhile: it settles stalled.
func (s *Service) takeOver(ctx context.Context, j Job) {
	if s.quiesced.Load() {
		return
	}
	if j.OfLanguageModel() {
		s.lostCall(ctx, j)
		return
	}
	if s.stallLeft(j, s.now()) <= 0 {
		if !s.runsHere(j.RequestID) { // a run of this process is stopped by its own stall timer
			s.settleLost(ctx, j, stalled)
		}
		return
	}
	if j.Attempts >= s.cfg.MaxAttempts {
		st := settlement{outcome: Failed, code: string(apierr.RunFailed), message: "the job was lost by its runner too many times"}
		if err := s.settle(ctx, j.RequestID, st); err != nil {
			s.quiet.warn(s.log, s.now(), "fail lost job", "request_id", j.RequestID, "err", err)
		}
		return
	}
	if !s.claimSlot(j.Model) {
		return
	}
	var claimed Job
	err := s.store.InTx(ctx, func(tx Tx) error {
		cur, err := tx.JobByRequestForUpdate(ctx, j.RequestID)
		if err != nil {
			return err
		}
		now := s.now()
		if cur.Status != InProgress || cur.LeaseUntil == nil || !cur.LeaseUntil.Before(now) {
			return errSkip
		}
		lease := now.Add(s.cfg.LeaseTTL)
		cur.LeaseOwner, cur.LeaseUntil = s.cfg.Owner, &lease
		cur.Attempts++
		claimed = cur
		return tx.UpdateJob(ctx, cur)
	})
	if err != nil {
		s.releaseSlot(j.Model)
		if !errors.Is(err, errSkip) {
			s.quiet.warn(s.log, s.now(), "take over job", "request_id", j.RequestID, "err", err)
		}
		return
	}
	s.log.Info("job taken over", "request_id", j.RequestID, "attempt", claimed.Attempts)
	if claimed.CancelAsked {
		s.releaseSlot(j.Model)
		_ = s.settle(ctx, j.RequestID, settlement{outcome: Cancelled})
		return
	}
	if err := s.start(claimed); err != nil {
		s.releaseSlot(j.Model)
	}
}

var errSkip = errors.New("skip")

// runsHere reports whether this process runs the job of requestID.
func (s *Service) runsHere(requestID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[requestID] != nil
}

// lostCallMessage is the failed job's message of a language model's call whose process
// stopped before it answered.
const lostCallMessage = "The process answering this call stopped before the answer came; the call was not run again and was refunded."

// lostCall settles a language model's job whose process stopped: failed run_failed and
// refunded in full (settleLost). It is not run again: its answer went only to the request that
// waited for it in the process that stopped (GET /v1/jobs/{id} carries no answer), so a second
// run would charge for an answer no one reads.
func (s *Service) lostCall(ctx context.Context, j Job) {
	s.settleLost(ctx, j, settlement{outcome: Failed, code: string(apierr.RunFailed), message: lostCallMessage})
}

// settleLost settles as st, while its lease is still run out, a job whose process stopped and
// that is not run again (a language model's call, a job past its stall ceiling), or cancelled
// when a cancel was asked; its settled event is written in the transaction and announced once,
// as for any settlement.
func (s *Service) settleLost(ctx context.Context, j Job, st settlement) {
	var settled Job
	err := s.store.InTx(ctx, func(tx Tx) error {
		settled = Job{}
		cur, err := tx.JobByRequestForUpdate(ctx, j.RequestID)
		if err != nil {
			return err
		}
		if cur.Status != InProgress || cur.LeaseUntil == nil || !cur.LeaseUntil.Before(s.now()) {
			return errSkip // settled, or its process renewed the lease meanwhile
		}
		st := st
		if cur.CancelAsked {
			st = settlement{outcome: Cancelled}
		}
		return s.settleTx(ctx, tx, &cur, st, &settled)
	})
	if err != nil {
		if !errors.Is(err, errSkip) {
			s.quiet.warn(s.log, s.now(), "settle lost job", "request_id", j.RequestID, "err", err)
		}
		return
	}
	s.log.Info("lost job settled, not run again", "request_id", j.RequestID, "outcome", settled.Outcome, "error_code", settled.ErrorCode)
	s.announce(settled)
}

// startQueued starts waiting jobs of model while this process has slots, charging each as it
// starts (a queued job costs nothing until then).
func (s *Service) startQueued(ctx context.Context, model string) {
	if s.quiesced.Load() {
		return
	}
	for {
		// Cheap look first: with every slot taken there is nothing to claim.
		if !s.slotFree(model) {
			return
		}
		var started Job
		// closed: the job was settled in the claim's transaction instead of started (overdue,
		// or refused at its turn).
		slot, closed := false, false
		err := s.store.InTx(ctx, func(tx Tx) error {
			closed = false
			if slot { // a retried transaction claims its slot again
				s.giveSlot(model)
				slot = false
			}
			// The head of the queue that no other process is starting (SKIP LOCKED on
			// PostgreSQL; SQLite's write transaction already excludes the others). The slot is
			// claimed only once a job is in hand: a slot claimed for an empty queue would, for
			// that moment, turn a concurrent submit away or queue it behind nobody.
			j, err := tx.ClaimQueued(ctx, model)
			if errors.Is(err, ErrNotFound) {
				return errSkip
			}
			if err != nil {
				return err
			}
			if overdue(j, s.now()) {
				// Its start-by passed before the overdue sweep came: it is not started but
				// settled as that sweep would, in this transaction.
				closed = true
				return s.settleTx(ctx, tx, &j, requestTimedOut, &started)
			}
			if !s.claimSlot(model) {
				return errSkip
			}
			slot = true
			// A queued job is charged at its turn through the one charge path: who pays is
			// judged again (a pass, or the key's ceiling and the balance); a refusal fails the
			// job at its turn.
			refusal, err := s.chargeTurn(ctx, tx, &j)
			if err != nil {
				return err
			}
			if refusal != nil {
				closed = true
				return s.settleTx(ctx, tx, &j, settlement{outcome: Failed, code: string(refusal.Code), message: turnRefusal(refusal), fields: refusal.Fields}, &started)
			}
			j.Dispatched = true
			started = j
			return tx.UpdateJob(ctx, j)
		})
		if slot && (err != nil || closed) {
			s.giveSlot(model)
		}
		if err != nil {
			if !errors.Is(err, errSkip) {
				s.quiet.warn(s.log, s.now(), "start queued job", "err", err)
			}
			return
		}
		if closed {
			// Settled only now that its transaction committed: one whose COMMIT failed (or
			// whose retries ran out) left the job waiting, and reporting it settled would count
			// it twice when a later turn closes it.
			s.announce(started)
			continue
		}
		s.changed(started.RequestID)
		if err := s.start(started); err != nil {
			s.giveSlot(model)
			return
		}
	}
}

// chargeTurn charges a queued job at its turn, in tx: its account is held, who pays is judged
// (ledger.Judge, as a turn) and the charge written, and the job moves to IN_PROGRESS under this
// process's lease. A job charged when it was handed off (Reserved > 0) is not charged again.
// A refusal is answered as refusal, with nothing written.
func (s *Service) chargeTurn(ctx context.Context, tx Tx, j *Job) (*apierr.Error, error) {
	now := s.now()
	quote := ledger.Credits(j.Quoted)
	if j.Reserved != 0 {
		quote = 0
	}
	r := ledger.Request{Job: ledger.Job{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.ID, Model: j.Model, Quote: quote}, Turn: true}
	v, c, err := s.ledger.Charge(ctx, tx, r, now)
	if e, ok := apierr.As(err); ok {
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	if quote > 0 {
		j.Coverage = v.Coverage
	}
	if c.Reserved > 0 {
		j.Reserved, j.Charged = int64(c.Reserved), int64(c.Reserved)
	}
	s.started(j, c, now)
	return nil, nil
}

// turnRefusal is the failed job's message for a charge refused at its turn.
func turnRefusal(e *apierr.Error) string {
	switch e.Code {
	case apierr.InsufficientCredits:
		return "the balance no longer covers the quote at the job's turn"
	case apierr.KeyCreditCeiling:
		return "the key's monthly credit ceiling no longer covers the quote at the job's turn"
	}
	return e.Text()
}

// overdue reports whether j still waits at now past its start-by (X-Svc-Request-Timeout, the
// model's longest wait, or a hand-off's wait for a worker): it is never started, and fails
// request_timeout, refunded (QST-06). The store's Overdue finds such jobs through an index;
// this decides, for the sweep and for a claim alike.
func overdue(j Job, now time.Time) bool {
	return j.Status == InQueue && j.StartBy != nil && j.StartBy.Before(now)
}

// requestTimedOut settles an overdue job, while it still is.
var requestTimedOut = settlement{outcome: Failed, code: string(apierr.RequestTimeout), message: "waited longer than the request timeout for a seat", whileOverdue: true}

// expireOverdue fails, refunded, the queued jobs (hand-offs included) whose start-by passed
// before any process started them: request_timeout.
func (s *Service) expireOverdue(ctx context.Context) {
	due, err := s.store.Overdue(ctx, s.now(), 100)
	if err != nil {
		return
	}
	for _, j := range due {
		if err := s.settle(ctx, j.RequestID, requestTimedOut); err != nil {
			s.quiet.warn(s.log, s.now(), "expire queued job", "request_id", j.RequestID, "err", err)
		}
	}
}
