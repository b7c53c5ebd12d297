package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// Submits together (Config.ChargeFirst). On a store over a network (PostgreSQL) each statement
// and each COMMIT costs both processes more than the rows it writes. Here the submits that would
// start at once and wait at one moment are charged and inserted in one transaction of five
// statements whatever their number: their accounts' locks (in id order), their keys and their
// in-flight counts, read in one round trip; then every charge in one statement and every job in
// another, sent with the COMMIT. Each is judged in memory in the order of checks (ledger.Held),
// on the accounts as the submits before it in the batch left them. A submit alone in its batch
// is charged first, in three statements (chargeAlone).
//
// Every caller is answered after the COMMIT that holds its job, or its refusal, returned. A
// refusal is judged on the batch's charges and commits nothing of its own. When the
// transaction fails, none of it was written: every submit of it takes the usual path on its
// own (errJudgeFirst), where a duplicate idempotency key, say, is answered as a replay. So are
// those the batch cannot judge (passes, an allowance due, a job already waiting for a model
// that queues). A caller who gave up before its batch ran is answered so, unwritten. Two
// submits with one idempotency key never share a batch.

// maxTogether bounds the submits of one batch; togetherRunners the batches in flight at once.
// One: the next batch gathers while one is written, and gathers more than two runners' batches
// would (at 32 clients, 0.11 transactions a job instead of 0.20, and about a fifth more jobs a
// second; at 8 clients, a third more), for what each batch costs the database is mostly its
// own, not its rows'.
const (
	maxTogether     = 64
	togetherRunners = 1
)

type together struct {
	s       *Service
	mu      sync.Mutex
	pending []*joint
	running int
}

// joint is one submit of a batch and, once done is closed, its answer.
type joint struct {
	ctx    context.Context
	base   Job // the job as Submit made it
	queues bool
	done   chan struct{}

	job     Job   // the job as charged and started
	balance int64 // the balance the charge left
	claimed bool  // a runner's slot is held for it
	err     error // a refusal, or errJudgeFirst: the usual path judges it
}

// submit charges and inserts job with the submits waiting at this moment, and answers once its
// batch committed or failed.
func (t *together) submit(ctx context.Context, job Job, queues bool) *joint {
	j := &joint{ctx: ctx, base: job, queues: queues, done: make(chan struct{})}
	t.mu.Lock()
	t.pending = append(t.pending, j)
	start := t.running < togetherRunners
	if start {
		t.running++
	}
	t.mu.Unlock()
	if start {
		go t.serve()
	}
	// Once queued, the answer is awaited whatever the context: the batch may commit the job.
	<-j.done
	return j
}

func (t *together) serve() {
	for {
		// Before taking a batch, let the goroutines ready to run take their turn: on a busy
		// machine they are submits about to join it (at 32 clients, 0.09 transactions a job
		// instead of 0.11 and about a tenth more jobs a second). With nothing else ready
		// this returns at once.
		runtime.Gosched()
		batch := t.take()
		if batch == nil {
			return
		}
		t.write(batch)
	}
}

// take removes the next batch from the pending submits; a submit whose account and
// idempotency key are already in it waits for the next.
func (t *together) take() []*joint {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		t.running--
		return nil
	}
	var batch, rest []*joint
	seen := map[[2]string]bool{}
	for _, j := range t.pending {
		k := [2]string{j.base.AccountID, j.base.IdempotencyKey}
		if len(batch) == maxTogether || seen[k] {
			rest = append(rest, j)
			continue
		}
		seen[k] = true
		batch = append(batch, j)
	}
	t.pending = rest
	return batch
}

func (t *together) write(batch []*joint) {
	s := t.s
	live := make([]*joint, 0, len(batch))
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err
			close(j.done)
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := jointContext(live)
	defer cancel()
	var err error
	if len(live) == 1 {
		err = s.inTxRecovered(ctx, func(tx Tx) error { return s.chargeAlone(ctx, tx, live[0]) })
	} else {
		err = s.inTxRecovered(ctx, func(tx Tx) error { return s.chargeTogether(ctx, tx, live) })
	}
	for _, j := range live {
		if err != nil {
			s.unclaim(j, true)
			// Nothing of the transaction was written. A refusal it ended on (a submit alone's)
			// is answered as it is; otherwise each submit is submitted on its own.
			if _, refused := apierr.As(err); refused {
				j.err = err
			} else {
				j.err = errJudgeFirst
			}
		}
		close(j.done)
	}
}

// unclaim gives back the runner's slot j holds, if any: released (waking the sweep of a model
// that queues) when j is refused, given back quietly when its transaction runs again.
func (s *Service) unclaim(j *joint, release bool) {
	if !j.claimed {
		return
	}
	if release {
		s.releaseSlot(j.base.Model)
	} else {
		s.giveSlot(j.base.Model)
	}
	j.claimed = false
}

// claimFor claims a runner's slot for j once its charge is judged, as the usual path claims it:
// on a model that queues, a job already waiting (waiting > 0) or no slot free sends the submit
// down the usual path, where it queues; on one that refuses a queue, no slot free is
// service_busy.
func (s *Service) claimFor(j *joint, waiting int) error {
	if j.queues && waiting > 0 {
		return errJudgeFirst
	}
	if !s.claimSlot(j.base.Model) {
		if j.queues {
			return errJudgeFirst
		}
		return apierr.New(apierr.ServiceBusy).WithRetryAfter(1)
	}
	j.claimed = true
	return nil
}

// inTxRecovered is InTx on a batch runner's goroutine, where a panic would end the process: it
// is logged and answered as the transaction's failure (the store rolled it back), and each
// submit of the batch then takes the usual path on its caller's goroutine.
func (s *Service) inTxRecovered(ctx context.Context, fn func(Tx) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("submits together: transaction panicked", "panic", v)
			err = fmt.Errorf("jobs: submits together: transaction panicked: %v", v)
		}
	}()
	return s.store.InTx(ctx, fn)
}

// jointContext is a batch's context: it ends at the latest of its callers' deadlines, if they
// all have one. No caller's cancellation ends it: the others' work is in the same transaction.
func jointContext(batch []*joint) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, j := range batch {
		d, ok := j.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// chargeAlone is the transaction of a submit alone in its batch, with its charge made before
// its account is read (ledger.ChargeFirst), one statement fewer than a batch takes: the ledger
// judges the charge after, in the usual order (standing, the plan's in-flight limit, the key's
// ceiling), and a runner's slot is then claimed (claimFor) once the account is held. Any error
// rolls the charge back. The store may run it again (a retried transaction).
func (s *Service) chargeAlone(ctx context.Context, tx Tx, j *joint) error {
	s.unclaim(j, false)
	j.job = j.base
	now := s.now()
	_, c, err := s.ledger.ChargeFirst(ctx, tx, auth.KeyRecord{ID: j.base.KeyID}, ledger.Job{AccountID: j.base.AccountID, KeyID: j.base.KeyID,
		JobID: j.base.ID, Model: j.base.Model, Quote: ledger.Credits(j.base.Quoted)}, now, func(a auth.Account) error { return s.admit(ctx, tx, a) })
	if errors.Is(err, ledger.ErrJudgeFirst) {
		return errJudgeFirst
	}
	if err != nil {
		return err
	}
	waiting := 0
	if j.queues {
		if waiting, err = tx.CountQueued(ctx, j.base.Model); err != nil {
			return err
		}
	}
	if err := s.claimFor(j, waiting); err != nil {
		return err
	}
	j.job.Reserved, j.job.Charged = int64(c.Reserved), int64(c.Reserved)
	s.started(&j.job, c, now)
	j.balance = int64(c.Balance)
	// A failed insert (a taken key, say) rolls the charge back, and the submit takes the usual
	// path, which answers it.
	return tx.InsertJob(ctx, j.job)
}

// chargeTogether is a batch's transaction. The store may run it again (a retried transaction):
// each run starts from the jobs as Submit made them and gives back the slots the run before
// claimed.
func (s *Service) chargeTogether(ctx context.Context, tx Tx, batch []*joint) error {
	now := s.now()
	pairs := make([]ledger.AccountKey, len(batch))
	var accounts, models []string
	for i, j := range batch {
		s.unclaim(j, false)
		j.err, j.job = nil, j.base
		pairs[i] = ledger.AccountKey{AccountID: j.base.AccountID, KeyID: j.base.KeyID}
		accounts = append(accounts, j.base.AccountID)
		if j.queues {
			models = append(models, j.base.Model)
		}
	}
	slices.Sort(accounts)
	accounts = slices.Compact(accounts)
	// On a model that queues, a newcomer never overtakes a job already waiting.
	var queued map[string]int
	if len(models) > 0 {
		slices.Sort(models)
		var err error
		if queued, err = tx.CountQueuedOf(ctx, slices.Compact(models)); err != nil {
			return err
		}
	}
	held, err := s.ledger.Hold(ctx, tx, pairs, now)
	if err != nil {
		return err
	}
	// Counted once the accounts are held: what their last holders committed is counted.
	inFlight, err := tx.CountInFlightOf(ctx, accounts)
	if err != nil {
		return err
	}
	charged := make([]Job, 0, len(batch))
	for _, j := range batch {
		job := j.base
		c, err := held.Charge(ledger.Job{AccountID: job.AccountID, KeyID: job.KeyID, JobID: job.ID, Model: job.Model, Quote: ledger.Credits(job.Quoted)},
			func(a auth.Account) error { return s.admitCount(a, inFlight[a.ID]) },
			func() error { return s.claimFor(j, queued[job.Model]) })
		if errors.Is(err, ledger.ErrJudgeFirst) {
			err = errJudgeFirst
		}
		if err != nil {
			j.err = err
			continue
		}
		inFlight[job.AccountID]++
		job.Reserved, job.Charged = int64(c.Reserved), int64(c.Reserved)
		s.started(&job, c, now)
		j.job, j.balance = job, int64(c.Balance)
		charged = append(charged, job)
	}
	if err := held.Write(ctx, tx); err != nil {
		return err
	}
	return tx.InsertJobs(ctx, charged)
}
