package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
)

var errStopping = errors.New("jobs: service stopping")

// Cancellation causes carried by a running job's context.
var (
	errCancelAsked = errors.New("cancel asked")
	errStalled     = errors.New("stall ceiling passed")
)

func (s *Service) concurrency(model string) int {
	if n, ok := s.cfg.Concurrency[model]; ok {
		return n
	}
	return s.cfg.ModelConcurrency
}

// claimSlot takes one of this process's runner slots for model.
func (s *Service) claimSlot(model string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || s.slots[model] >= s.concurrency(model) {
		return false
	}
	s.slots[model]++
	return true
}

// slotFree reports whether this process has a free slot for model now.
func (s *Service) slotFree(model string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.stopping && s.slots[model] < s.concurrency(model)
}

// giveSlot gives back a slot claimed for a job that did not start, without waking the sweep.
func (s *Service) giveSlot(model string) {
	s.mu.Lock()
	s.slots[model]--
	s.mu.Unlock()
}

// releaseSlot gives a slot back; on a model that queues, it wakes the sweep to start the next
// waiting job. A model that refuses a queue has no one waiting: no sweep.
func (s *Service) releaseSlot(model string) {
	s.mu.Lock()
	s.slots[model]--
	s.mu.Unlock()
	if s.queues(model) {
		s.kick()
	}
}

func (s *Service) queues(model string) bool {
	m, ok := s.catalog.Model(model)
	return ok && m.Lifecycle.Queue == catalog.QueueOffers
}

func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// start runs a job that holds a slot and a lease in a goroutine owned by the service.
func (s *Service) start(j Job) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return errStopping
	}
	stall := max(s.stallLeft(j, s.now()), 0)
	ctx, cancel := context.WithCancelCause(s.base)
	rj := &runningJob{job: j, cancel: cancel, done: make(chan struct{}), flushedAt: time.Now()}
	s.running[j.RequestID] = rj
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer s.releaseSlot(j.Model)
		defer func() {
			s.mu.Lock()
			delete(s.running, j.RequestID)
			s.mu.Unlock()
		}()
		defer close(rj.done) // before it leaves s.running: a waiter that found it is answered
		timer := time.AfterFunc(stall, func() { cancel(errStalled) })
		defer timer.Stop()
		res, err := s.execute(ctx, rj)
		cause := context.Cause(ctx)
		cancel(nil)
		s.finish(rj, res, err, cause)
	}()
	return nil
}

// stallCeiling is the longest a job of model may run: its lifecycle's stall ceiling, or ten
// minutes for a model without one.
func (s *Service) stallCeiling(model string) time.Duration {
	m, ok := s.catalog.Model(model)
	if !ok {
		m, ok = s.catalog.LanguageModel(model) // chat and embeddings have no queue-host address
	}
	if ok && m.Lifecycle.StallCeilingSeconds > 0 {
		return time.Duration(m.Lifecycle.StallCeilingSeconds) * time.Second
	}
	return 10 * time.Minute
}

// stallLeft is how long j may still run at now: its stall ceiling less the time since its
// first start, which a job taken over keeps, so that no rerun stretches the job past
// give_up_after_seconds (spec 01, QST-08). At or below zero the job is stalled.
func (s *Service) stallLeft(j Job, now time.Time) time.Duration {
	left := s.stallCeiling(j.Model)
	if j.StartedAt != nil {
		left -= now.Sub(*j.StartedAt)
	}
	return left
}

// stalled is the settlement of a job past its stall ceiling: failed, refunded.
var stalled = settlement{outcome: Failed, code: string(apierr.Stalled), message: "the run passed the model's stall ceiling"}

func (s *Service) execute(ctx context.Context, rj *runningJob) (res runners.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &runners.Failure{Code: string(apierr.RunFailed), Message: runFailedOnOurSide, Cause: fmt.Errorf("runner panic: %v", v)}
		}
	}()
	rn, err := s.runners.For(rj.job.Model)
	if err != nil {
		return runners.Result{}, &runners.Failure{Code: string(apierr.RunFailed), Message: runFailedOnOurSide, Cause: err}
	}
	rj.addLog("info", "job "+rj.job.ID+" started on "+s.cfg.Owner, s.now())
	env := s.env(rj.job, &reporter{rj: rj, now: s.now, broker: s.broker, soon: s.progressSoon})
	return rn.Run(ctx, runners.Job{ID: rj.job.ID, RequestID: rj.job.RequestID, Address: "svc-serverless/" + rj.job.Model,
		Slug: rj.job.Model, Input: rj.job.Input, Quoted: rj.job.Quoted}, env)
}

// runFailedOnOurSide is the message of a run that failed for a reason of the service's own (a
// runner's panic or plain error): its words reach the person, the error the log.
const runFailedOnOurSide = "The model failed to run this job on our side; the job was refunded."

// finish turns a run's return into a settlement.
func (s *Service) finish(rj *runningJob, res runners.Result, err error, cause error) {
	st := settlement{outcome: Succeeded, result: &res, done: res.Done}
	if st.done == 0 && err == nil {
		st.done = 1
	}
	var ref *runners.Refusal
	var fail *runners.Failure
	switch {
	case errors.Is(cause, errStopping):
		return // process shutting down: the lease runs out and the job runs again elsewhere
	case errors.Is(cause, errStalled):
		st = stalled
	case errors.Is(cause, errCancelAsked) && err == nil:
		// The run completed before it saw the cancellation (a runner returns ctx's error once
		// it stops): the job succeeded and the cancel answers cancel_raced, so the caller
		// keeps the output it paid for in full.
	case errors.Is(cause, errCancelAsked):
		st = settlement{outcome: Cancelled, done: res.Done}
	case err == nil:
	case errors.As(err, &ref):
		st = settlement{outcome: Failed, code: ref.Code, detail: ref.Detail, message: ref.Error(), refusal: true}
		if st.code == "" {
			st.code = string(apierr.InvalidInput)
		}
		if len(st.detail) == 0 {
			// The model's refusal of the request as written answers 422 with detail on the
			// queue host, also on the result read (spec 02 "Error body"): name the body.
			st.detail = []runners.Violation{{Loc: []string{"body"}, Msg: ref.Error(), Type: st.code}}
		}
	case errors.As(err, &fail):
		st = settlement{outcome: Failed, code: fail.Code, message: fail.Message}
		if fail.Cause != nil {
			s.log.Warn("run failed", "request_id", rj.job.RequestID, "model", rj.job.Model, "code", fail.Code, "err", fail.Cause)
		}
	default:
		// An error no runner described: the chain is for the log; the job says what happened.
		s.log.Error("run failed", "request_id", rj.job.RequestID, "model", rj.job.Model, "err", err)
		st = settlement{outcome: Failed, code: string(apierr.RunFailed), message: runFailedOnOurSide}
	}
	if st.code != "" && !apierr.Known(apierr.Code(st.code)) && !st.refusal {
		st.message = st.code + ": " + st.message
		st.code = string(apierr.RunFailed)
	}
	rj.mu.Lock()
	st.logs = append([]LogLine(nil), rj.logs...)
	rj.mu.Unlock()
	st.metrics = res.Metrics
	st.balance = rj.job.BalanceAfter
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.settleRun(ctx, rj, st, errors.Is(cause, errCancelAsked)); err != nil {
		s.log.Error("settle failed; the lease will run out and the job runs again", "request_id", rj.job.RequestID, "err", err)
	}
}

type settlement struct {
	outcome Outcome
	code    string
	message string
	detail  []runners.Violation
	fields  map[string]any // the refusal's carried fields (Job.ErrorFields)
	refusal bool
	result  *runners.Result
	done    float64
	// exact is the unrounded price of the quoted work, for a job that did part of it (price);
	// nil until priced, and for a job settled on its rounded quote.
	exact   *big.Rat
	logs    []LogLine
	metrics map[string]float64
	balance *int64 // the balance the job's charge left, when this process charged it
	// whileOverdue settles the job only while it still waits past its start-by (overdue): a
	// process that started it meanwhile settles it itself.
	whileOverdue bool
}

// charged is the share of the quote the settlement keeps: what the run did, nothing when it
// failed.
func (st settlement) charged() float64 {
	if st.outcome == Failed {
		return 0
	}
	return st.done
}

// price is st with the unrounded price of j's quoted work, which a job that did part of it is
// charged its share of (ledger.Settle): the job's stored input is quoted again only then, never
// for a job that completes or fails. A language model's quote has none (its runner reports the
// share of the rounded quote it used), nor has a job whose model or price changed since it was
// quoted: that job is charged its share of the credits it reserved.
func (s *Service) price(j Job, st settlement) settlement {
	if st.exact != nil || j.Reserved <= 0 || st.charged() <= 0 || st.charged() >= 1 {
		return st
	}
	m, ok := s.catalog.Model(j.Model)
	if !ok {
		return st
	}
	if q, err := m.Quote(catalog.Input{JSON: j.Input}); err == nil && q.Credits == j.Quoted {
		st.exact = q.Exact
	}
	return st
}

// settle closes a job exactly once: the charge settles at or below the quote, the rest is
// refunded, and the outbox gets the job's one event — all in one transaction.
func (s *Service) settle(ctx context.Context, requestID string, st settlement) error {
	var settled Job
	err := s.store.InTx(ctx, func(tx Tx) error {
		j, err := tx.JobByRequestForUpdate(ctx, requestID)
		if err != nil {
			return err
		}
		if j.Settled() || st.whileOverdue && !overdue(j, s.now()) {
			settled = Job{}
			return nil // settled twice notifies once
		}
		return s.settleTx(ctx, tx, &j, st, &settled)
	})
	if err == nil && settled.RequestID != "" {
		s.announce(settled)
	}
	return err
}

// announce tells of a settlement that committed: kept for the job's waiters and later reads,
// the job's watchers woken, and its event and figures reported.
func (s *Service) announce(settled Job) {
	s.keepSettled(settled.RequestID, settled)
	s.changed(settled.RequestID)
	s.settled(settled)
}

// settleRun is settle for a run of this process, from the job as the run holds it: the job's
// row is not read again. What the run started from is what the row holds (the run charged and
// started it, or read it to take it over), apart from columns the settlement overwrites (lease,
// logs, progress) and the cancel flag, passed in; the write is guarded by the job not being
// settled yet (ErrSettled), in the transaction that moves the credits, so a job settled
// elsewhere meanwhile is settled once.
func (s *Service) settleRun(ctx context.Context, rj *runningJob, st settlement, cancelAsked bool) error {
	j := rj.job
	j.CancelAsked = j.CancelAsked || cancelAsked
	var settled Job
	var err error
	st = s.price(j, st)
	charge, refund := ledger.Settle(j.Reserved, st.charged(), st.exact)
	if refund == 0 {
		// Nothing moves but the job and its event (a chat turn has none): written with the
		// settlements waiting at this moment (settle.go).
		ev := s.closed(&j, st, ledger.Closed{Charged: ledger.Credits(charge)}, s.now())
		if err = s.closeJob(ctx, j, ev); err == nil {
			settled = j
		}
	} else {
		// A refund moves credits in the job's transaction.
		err = s.store.InTx(ctx, func(tx Tx) error {
			j := j
			return s.settleTx(ctx, tx, &j, st, &settled)
		})
	}
	if errors.Is(err, ErrSettled) {
		return nil // settled twice notifies once
	}
	if err == nil {
		s.announce(settled)
	}
	return err
}

// settleTx settles j in tx: the ledger keeps what the work done costs and refunds the rest, and
// the job and its event are written.
func (s *Service) settleTx(ctx context.Context, tx Tx, j *Job, st settlement, out *Job) error {
	now := s.now()
	st = s.price(*j, st)
	closed, err := s.ledger.Settle(ctx, tx, ledger.Settlement{Job: ledger.Job{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.ID, Model: j.Model},
		Reserved: ledger.Credits(j.Reserved), Done: st.charged(), Exact: st.exact, Created: j.CreatedAt}, now)
	if err != nil {
		return err
	}
	ev := s.closed(j, st, closed, now)
	if err := tx.CloseJob(ctx, *j, ev); err != nil {
		return err
	}
	*out = *j
	return nil
}

// closed writes settlement st, whose credits closed as closed, into j, and answers the job's
// event (nil for a chat turn: the request that paid for the turn answers it, spec 02 "Events").
func (s *Service) closed(j *Job, st settlement, closed ledger.Closed, now time.Time) *Event {
	if closed.Balance != nil {
		b := int64(*closed.Balance)
		j.BalanceAfter = &b
	} else {
		j.BalanceAfter = st.balance // the charge was the job's last movement
	}
	j.Status, j.Outcome, j.Charged = Completed, st.outcome, int64(closed.Charged)
	j.ErrorCode, j.ErrorMessage, j.ErrorDetail, j.ErrorFields = st.code, st.message, st.detail, st.fields
	if st.outcome == Succeeded {
		j.Result = st.result
	} else if st.outcome == Cancelled && st.result != nil && len(st.result.Files) > 0 {
		j.Result = st.result
	}
	if st.logs != nil {
		j.Logs = st.logs
	}
	if st.metrics != nil {
		j.Metrics = st.metrics
	}
	j.Progress = st.charged()
	j.FinishedAt, j.LeaseOwner, j.LeaseUntil = &now, "", nil
	if j.Product == catalog.ProductChat {
		return nil
	}
	e := eventOf(*j, now)
	return &e
}

func eventOf(j Job, now time.Time) Event {
	return Event{ID: "evt_" + j.ID + "_" + string(j.Outcome), AccountID: j.AccountID, JobID: j.ID, RequestID: j.RequestID,
		Type: "job." + string(j.Outcome), Product: j.Product, Status: j.Outcome, ErrorCode: j.ErrorCode, Charged: j.Charged,
		Reserved: j.Reserved, Webhook: j.Webhook, CreatedAt: now}
}

// reporter collects a runner's logs and progress; soon has them written for the other
// processes (progressSoon).
type reporter struct {
	rj     *runningJob
	now    func() time.Time
	broker *broker
	soon   func(*runningJob)
}

func (r *reporter) Log(level, message string) {
	r.rj.addLog(level, message, r.now())
	r.broker.publish(r.rj.job.RequestID)
	r.soon(r.rj)
}

func (r *reporter) Progress(f float64) {
	r.rj.mu.Lock()
	r.rj.progress, r.rj.dirty = f, true
	r.rj.mu.Unlock()
	r.soon(r.rj)
}

func (rj *runningJob) addLog(level, message string, at time.Time) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if len(rj.logs) < 1000 {
		rj.logs = append(rj.logs, LogLine{Message: message, Level: level, Source: "runner", Timestamp: at})
	}
	rj.dirty = true
}

// Cancel asks a job to stop (PUT cancel_url). A queued job is cancelled at once and costs
// nothing; a running one is asked to stop and settles at the cost of the work done. It answers
// the job once settled, or pending=true when the runner has not stopped within a few seconds.
func (s *Service) Cancel(ctx context.Context, accountID, requestID string) (Job, bool, error) {
	var j Job
	var settledNow bool
	err := s.store.InTx(ctx, func(tx Tx) error {
		settledNow = false // a retried transaction decides again
		var err error
		j, err = tx.JobByRequestForUpdate(ctx, requestID)
		if errors.Is(err, ErrNotFound) || (err == nil && j.AccountID != accountID) {
			return apierr.New(apierr.NotFound)
		}
		if err != nil {
			return err
		}
		if j.Settled() {
			return apierr.New(apierr.CancelRefused, "status", string(j.Outcome)).WithCharged(j.ChargedState())
		}
		if j.Status == InQueue {
			settledNow = true
			if err := s.settleTx(ctx, tx, &j, settlement{outcome: Cancelled}, &j); err != nil {
				if _, ok := apierr.As(err); ok {
					return err
				}
				// The job could not be closed here (the store failed mid-settlement): nothing
				// changed, the job still waits; read it before cancelling again (settle_failed).
				return apierr.New(apierr.SettleFailed).Wrap(err)
			}
			return nil
		}
		if rn, err := s.runners.For(j.Model); err == nil {
			if c, ok := rn.(runners.Canceller); ok && !c.CanCancel(j.Model) {
				return apierr.Newf(apierr.CancelUnsupported, "This model cannot stop a job once it runs; the job runs to its end.").With("product", j.Product)
			}
		}
		j.CancelAsked = true
		return tx.UpdateJob(ctx, j)
	})
	if err != nil {
		if _, ok := apierr.As(err); ok {
			return Job{}, false, err
		}
		return Job{}, false, apierr.New(apierr.CancelFailed).Wrap(err)
	}
	if settledNow {
		s.settled(j)
		s.changed(requestID)
		return j, false, nil
	}
	s.signalCancel(requestID)
	s.notify(CancelAsked, requestID) // the run may be another process's
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	j, timedOut, err := s.Wait(wctx, accountID, requestID, 3*time.Second)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return Job{}, false, err
	}
	if timedOut || !j.Settled() {
		return j, true, nil
	}
	if j.Outcome != Cancelled {
		return j, false, apierr.New(apierr.CancelRaced).With("status", string(j.Outcome))
	}
	return j, false, nil
}

func (s *Service) signalCancel(requestID string) {
	s.mu.Lock()
	rj := s.running[requestID]
	s.mu.Unlock()
	if rj != nil {
		rj.cancel(errCancelAsked)
	}
}
