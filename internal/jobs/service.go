package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
)

// Config holds the operator's figures (DESIGN.md decision 28).
type Config struct {
	Owner            string        // this process's lease owner name
	LeaseTTL         time.Duration // a running job's lease; another process may take it after
	HeartbeatEvery   time.Duration
	SweepEvery       time.Duration
	ModelConcurrency int               // jobs one process runs at once per model
	InFlight         map[auth.Plan]int // jobs an account may have in flight, per plan
	MaxAttempts      int               // runs of one job before it fails (crash recovery)
	Concurrency      map[string]int    // per-model override of ModelConcurrency
	// Runs says this process runs jobs (the worker role). Without it Submit never claims a
	// local slot: it charges and inserts the job as a hand-off a worker's sweep starts, and
	// Run does no background work (no process renews a lease it does not hold).
	Runs bool
	// HandOffWait is how long a hand-off of a model that refuses a queue waits for a worker
	// before it fails request_timeout, refunded (processes without Runs only).
	HandOffWait time.Duration
	// PollEvery, when set, makes Run look for hand-offs at that interval besides the sweep: a
	// worker that serves no surface is told of no submit, so it looks.
	PollEvery time.Duration
	// ChargeFirst charges the submits that start at once and wait at one moment together, in
	// one transaction of a few statements (together.go), where the account allows it
	// (ledger.ChargesFirst): on a store over a network (PostgreSQL) a batch then costs what one
	// submit costs. A submit the batch cannot judge takes the usual path.
	ChargeFirst bool
}

// DefaultConfig is the configuration as shipped.
func DefaultConfig() Config {
	return Config{
		Owner: "proc_" + randomHex(6), LeaseTTL: 15 * time.Second, HeartbeatEvery: 5 * time.Second, SweepEvery: time.Second,
		ModelConcurrency: 4, MaxAttempts: 3, Runs: true, HandOffWait: 30 * time.Second,
		InFlight: map[auth.Plan]int{auth.Free: 0, auth.Pro: 10, auth.Max: 25, auth.Ultimate: 50},
	}
}

// EnvFunc gives a runner its environment for one job.
type EnvFunc func(j Job, report runners.Reporter) runners.Env

// Service runs the job state machine.
type Service struct {
	store   Store
	ledger  *ledger.Service
	catalog *catalog.Catalog
	runners runners.Registry
	env     EnvFunc
	now     func() time.Time
	log     *slog.Logger
	cfg     Config
	rand    func() uint32

	broker   *broker
	seats    *Seats
	finals   *finals   // recently settled jobs (settled.go)
	together *together // submits charged together (Config.ChargeFirst)

	recorder Recorder // nil: settled jobs are logged only

	mu       sync.Mutex
	slots    map[string]int         // running jobs per model in this process
	running  map[string]*runningJob // by request id
	stopping bool
	wg       sync.WaitGroup
	base     context.Context
	wake     chan struct{}
}

type runningJob struct {
	job      Job
	cancel   context.CancelCauseFunc
	mu       sync.Mutex
	logs     []LogLine
	progress float64
	dirty    bool
	// done is closed when the run is over, after its settlement (if any) was committed;
	// settled is then the job as committed (nil when the settlement failed or the process
	// stopped): a held request reads it here instead of from the database (settled.go).
	done    chan struct{}
	settled *Job
}

// New wires the service. Call Run to start the background loops.
func New(store Store, cat *catalog.Catalog, reg runners.Registry, env EnvFunc, seats *Seats, now func() time.Time, log *slog.Logger, cfg Config) *Service {
	s := &Service{store: store, ledger: ledger.New(store, now), catalog: cat, runners: reg, env: env, now: now, log: log, cfg: cfg, seats: seats,
		rand: randomUint32, broker: newBroker(), finals: newFinals(), slots: map[string]int{}, running: map[string]*runningJob{},
		base: context.Background(), wake: make(chan struct{}, 1)}
	s.together = &together{s: s}
	return s
}

// Seats returns the held-connection seats.
func (s *Service) Seats() *Seats { return s.seats }

// Catalog returns the catalogue in force.
func (s *Service) Catalog() *catalog.Catalog { return s.catalog }

var idemPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidIdempotencyKey reports whether k matches [A-Za-z0-9._-]{1,64}.
func ValidIdempotencyKey(k string) bool { return idemPattern.MatchString(k) }

// SubmitRequest is one submit, its options already parsed by the transport.
type SubmitRequest struct {
	Principal      *auth.Principal
	Model          *catalog.Model
	Body           []byte
	IdempotencyKey string // empty: minted
	Priority       Priority
	MaxQueueLength *int
	RequestTimeout time.Duration // 0: the product's deadline
	CoveredOnly    bool
	Webhook        string
}

// SubmitResult is the outcome of a submit.
type SubmitResult struct {
	Job        Job
	Replayed   bool
	Unresolved bool // dispatch could not be confirmed: 202, the charge stands
	Warnings   []catalog.Warning
	Balance    int64 // credits_remaining
}

// Submit validates, quotes, lets the ledger decide who pays (pass, or credits within the key's
// ceiling and the balance), takes a seat or a place in the queue, charges and inserts: everything
// that touches credits is one transaction.
//
// An idempotency key belongs to the account (DESIGN 25): it answers the first request made with
// it, whatever product, model or body is sent later, and the job keeps the first request's id.
func (s *Service) Submit(ctx context.Context, r SubmitRequest) (SubmitResult, error) {
	m, p := r.Model, r.Principal
	now := s.now()
	key := r.IdempotencyKey
	minted := key == ""
	if minted {
		key = "k" + newRequestID() // in time order too: the job's id is built from it
	}
	id := m.Product + "_" + key
	// A key the service minted has never been seen: no need to look it up.
	if !minted {
		if prev, err := s.store.JobByIdempotencyKey(ctx, p.Account.ID, key); err == nil {
			// A replay takes no transaction: a principal the gate took from its cache is
			// confirmed here, so a revoked key replays nothing (KEY-25).
			if p.Unconfirmed {
				if err := s.ledger.Standing(ctx, p.Account.ID, p.Key.ID, now); err != nil {
					return SubmitResult{}, err
				}
				p.Unconfirmed = false
			}
			return SubmitResult{Job: prev, Replayed: true}, nil
		} else if !errors.Is(err, ErrNotFound) {
			return SubmitResult{}, apierr.New(apierr.JobReadFailed).Wrap(err)
		}
	}
	in, warnings, err := m.Validate(r.Body, now, s.rand)
	if err != nil {
		return SubmitResult{}, inputError(err)
	}
	q, err := m.Quote(in)
	if err != nil {
		return SubmitResult{}, inputError(err)
	}
	lc := m.Lifecycle
	job := Job{ID: id, AccountID: p.Account.ID, KeyID: p.Key.ID, RequestID: newRequestID(), Model: m.Slug, Product: m.Product,
		IdempotencyKey: key, Input: in.JSON, Quoted: q.Credits, Priority: r.Priority, Webhook: r.Webhook, Dispatched: true, CreatedAt: now}
	if job.Priority == "" {
		job.Priority = Normal
	}
	queues := lc.Queue == catalog.QueueOffers
	var res SubmitResult
	var claimed bool
	base := job
	// usual is the submit's transaction as the ledger judges a charge before making it.
	usual := func(tx Tx) (err error) {
		// The store may run this function again (a retried transaction): each run starts from
		// the job as it was before the first (a charge the earlier run wrote into it was rolled
		// back with that run), and a slot the earlier run took is given back, or it would never
		// be released.
		job, res = base, SubmitResult{}
		if claimed {
			s.giveSlot(m.Slug)
			claimed = false
		}
		// A refused submit gives its runner slot back at once, not after the COMMIT: the
		// store may commit several transactions together (group commit), and refused
		// submits waiting for that COMMIT must not hold slots that others could start on.
		defer func() {
			if err != nil && claimed {
				s.releaseSlot(m.Slug)
				claimed = false
			}
		}()
		// The key is read with the account: its standing is confirmed here, and its ceiling
		// and spend are judged as they stand, not as the gate's cache saw them.
		a, k, err := s.ledger.OpenFor(ctx, tx, p.Account.ID, p.Key, now)
		if err != nil {
			return err
		}
		if err := s.admit(ctx, tx, a); err != nil {
			return err
		}
		cov, err := s.ledger.Decide(ctx, tx, a, k, m.Slug, ledger.Credits(q.Credits), r.CoveredOnly, now)
		if err != nil {
			return err
		}
		job.Coverage = cov
		if !s.cfg.Runs {
			bal, err := s.handOff(ctx, tx, a, &job, r, now)
			res.Balance = bal
			return err
		}
		// A seat on a runner: models that refuse a queue start now or are refused now; on a
		// model that queues, a newcomer never overtakes requests already waiting.
		waiting := 0
		if queues {
			if waiting, err = tx.CountQueued(ctx, m.Slug); err != nil {
				return err
			}
		}
		claimed = waiting == 0 && s.claimSlot(m.Slug)
		if !claimed {
			if !queues {
				return apierr.New(apierr.ServiceBusy).WithRetryAfter(1)
			}
			if r.MaxQueueLength != nil && waiting > *r.MaxQueueLength {
				return apierr.New(apierr.QueueTooLong, "waiting", waiting, "max", *r.MaxQueueLength)
			}
			wait := time.Duration(lc.MaxWaitSeconds) * time.Second
			if r.RequestTimeout > 0 && (wait == 0 || r.RequestTimeout < wait) {
				wait = r.RequestTimeout
			}
			if wait > 0 {
				t := now.Add(wait)
				job.StartBy = &t
			}
			job.Status = InQueue
			res.Balance = a.Balance
			return tx.InsertJob(ctx, job)
		}
		bal, err := s.charge(ctx, tx, a, &job, now, true)
		if err != nil {
			return err
		}
		res.Balance = bal
		if err := tx.InsertJob(ctx, job); err != nil && !errors.Is(err, ErrDuplicate) {
			// The charge above is in this transaction and is reversed with it: retrying with
			// the same idempotency key is safe (job_record_failed).
			return apierr.New(apierr.JobRecordFailed).Wrap(err)
		} else if err != nil {
			return err
		}
		return nil
	}
	// A submit that would start at once may be charged with the others waiting at this moment
	// (together.go); one the batch could not judge, or whose batch failed, was not written and
	// takes the usual path.
	err = errJudgeFirst
	if s.cfg.ChargeFirst && s.cfg.Runs && ledger.ChargesFirst(p.Account, p.Key.ID, ledger.Credits(q.Credits), r.CoveredOnly, now) {
		j := s.together.submit(ctx, base, queues)
		if err = j.err; err == nil {
			job, res.Balance, claimed = j.job, j.balance, j.claimed
		}
	}
	if errors.Is(err, errJudgeFirst) {
		err = s.store.InTx(ctx, usual)
	}
	if err != nil {
		if claimed {
			s.releaseSlot(m.Slug)
		}
		if errors.Is(err, ErrDuplicate) && !minted { // lost a race on the same key: answer the winner
			if prev, e := s.store.JobByIdempotencyKey(ctx, p.Account.ID, key); e == nil {
				return SubmitResult{Job: prev, Replayed: true}, nil
			}
		}
		if _, ok := apierr.As(err); ok {
			return SubmitResult{}, err
		}
		if errors.Is(err, ErrNotRecorded) { // the insert failed at the COMMIT (Tx.InsertJob)
			return SubmitResult{}, apierr.New(apierr.JobRecordFailed).Wrap(err)
		}
		return SubmitResult{}, apierr.New(apierr.CreditReserveFailed).Wrap(err)
	}
	// The transaction confirmed the caller's standing (ledger.OpenFor or ChargeFirst): what is
	// answered from here on needs no other confirmation.
	p.Unconfirmed = false
	res.Job, res.Warnings = job, warnings
	if claimed {
		if err := s.start(job); err != nil {
			// The process is stopping: the charge stands and the job is picked up again when
			// its lease runs out (202 dispatch_unresolved).
			s.releaseSlot(m.Slug)
			res.Unresolved = true
			res.Job.Status = InQueue
			res.Job.Dispatched = false
		}
	} else {
		s.kick()
	}
	return res, nil
}

// handOff is Submit in a process that runs no job (no worker role): the job is charged now,
// as a submit that starts at once would be, and inserted IN_QUEUE for a worker's sweep, which
// starts it without charging again (Reserved > 0); a pass is used only when the job starts,
// as for any queued job. Nothing here claims a local slot.
//
// service_busy is judged on the shared queue, since this process cannot see the workers'
// slots: a model that refuses a queue is busy while as many hand-offs of it wait as one
// worker runs at once (its concurrency), and each hand-off of such a model waits at most
// HandOffWait for a worker before it fails request_timeout, refunded. A model that queues
// keeps its own rules (max_queue_length, its longest wait).
func (s *Service) handOff(ctx context.Context, tx Tx, a auth.Account, job *Job, r SubmitRequest, now time.Time) (int64, error) {
	balance := a.Balance
	m := r.Model
	waiting, err := tx.CountQueued(ctx, m.Slug)
	if err != nil {
		return 0, err
	}
	wait := time.Duration(m.Lifecycle.MaxWaitSeconds) * time.Second
	if m.Lifecycle.Queue != catalog.QueueOffers {
		if waiting >= s.concurrency(m.Slug) {
			return 0, apierr.New(apierr.ServiceBusy).WithRetryAfter(1)
		}
		wait = s.cfg.HandOffWait
	} else if r.MaxQueueLength != nil && waiting > *r.MaxQueueLength {
		return 0, apierr.New(apierr.QueueTooLong, "waiting", waiting, "max", *r.MaxQueueLength)
	}
	if r.RequestTimeout > 0 && (wait == 0 || r.RequestTimeout < wait) {
		wait = r.RequestTimeout
	}
	if wait > 0 {
		t := now.Add(wait)
		job.StartBy = &t
	}
	if !job.Coverage.Covered() {
		bal, err := s.charge(ctx, tx, a, job, now, true)
		if err != nil {
			return 0, err
		}
		balance = bal
	}
	// Charged, not started: the worker that starts it takes the lease and counts the attempt.
	job.Status, job.StartedAt, job.LeaseOwner, job.LeaseUntil, job.ProviderJobID = InQueue, nil, "", nil, ""
	job.Attempts = 0
	return balance, tx.InsertJob(ctx, *job)
}

// charge takes the job's quote through the ledger (a pass's use, or credits within the key's
// ceiling and the balance) and moves the job to IN_PROGRESS under this process's lease. a is
// the account as ledger.Open returned it in this transaction. submit says the transaction
// commits nothing when the charge is refused (a submit's), which lets the ledger move the
// debit and the key's spend together (ledger.Service.ChargeFor); a queued job charged at its
// turn commits its failure instead.
func (s *Service) charge(ctx context.Context, tx Tx, a auth.Account, j *Job, now time.Time, submit bool) (int64, error) {
	quote := ledger.Credits(j.Quoted)
	if j.Reserved != 0 {
		quote = 0 // charged already (a job taken over after a crash is not charged twice)
	}
	take := s.ledger.Charge
	if submit {
		take = s.ledger.ChargeFor
	}
	c, err := take(ctx, tx, a, ledger.Job{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.ID, Model: j.Model,
		Quote: quote, Coverage: j.Coverage}, now)
	if err != nil {
		return 0, err
	}
	if c.Reserved > 0 {
		j.Reserved, j.Charged = int64(c.Reserved), int64(c.Reserved)
	}
	s.started(j, c, now)
	return int64(c.Balance), nil
}

// started moves a job that c charged to IN_PROGRESS under this process's lease.
func (s *Service) started(j *Job, c ledger.Charged, now time.Time) {
	bal := int64(c.Balance)
	j.BalanceAfter = &bal
	lease := now.Add(s.cfg.LeaseTTL)
	j.Status, j.StartedAt, j.LeaseOwner, j.LeaseUntil = InProgress, &now, s.cfg.Owner, &lease
	j.Attempts++
	j.ProviderJobID = j.RequestID
}

// admit refuses a submit the account's plan has no room for: its in-flight limit.
func (s *Service) admit(ctx context.Context, tx Tx, a auth.Account) error {
	if _, ok := s.cfg.InFlight[a.Plan]; !ok {
		return nil
	}
	n, err := tx.CountInFlight(ctx, a.ID)
	if err != nil {
		return err
	}
	return s.admitCount(a, n)
}

// admitCount is admit for an account with n jobs in flight.
func (s *Service) admitCount(a auth.Account, n int) error {
	if limit, ok := s.cfg.InFlight[a.Plan]; ok && n >= limit {
		return apierr.New(apierr.TooManyJobs, "limit", limit, "plan", string(a.Plan), "tier", nil)
	}
	return nil
}

// errJudgeFirst sends a submit down the usual path: its batch could not judge it, or failed,
// and wrote nothing of it.
var errJudgeFirst = fmt.Errorf("jobs: %w", ledger.ErrJudgeFirst)

// inputError maps the catalogue's refusals to the error catalogue.
func inputError(err error) error {
	var inv *catalog.InvalidError
	var np *catalog.NotPricedError
	switch {
	case errors.As(err, &inv):
		e := apierr.New(apierr.InvalidInput)
		for _, v := range inv.Violations {
			e.WithDetail(apierr.Violation{Loc: locAny(v.Loc), Msg: v.Msg, Type: v.Type})
		}
		e.WithOmitted(inv.Omitted) // the validator stopped collecting at its cap
		if len(inv.Violations) > 0 {
			e.Message = fmt.Sprintf("%s: %s", joinLoc(inv.Violations[0].Loc), inv.Violations[0].Msg)
		}
		return e
	case errors.As(err, &np):
		return apierr.Newf(apierr.BandNotPriced, "%s", np.Message).With("message", np.Message)
	}
	return err
}

func locAny(loc []string) []any {
	out := make([]any, len(loc))
	for i, l := range loc {
		out[i] = l
	}
	return out
}

func joinLoc(loc []string) string {
	s := ""
	for i, l := range loc {
		if i > 0 {
			s += "."
		}
		s += l
	}
	return s
}

// Get reads a job by request id for its own account (not_found otherwise, the same answer
// as a missing one).
func (s *Service) Get(ctx context.Context, accountID, requestID string) (Job, error) {
	if j, ok := s.finals.get(requestID); ok {
		if j.AccountID != accountID {
			return Job{}, apierr.New(apierr.NotFound)
		}
		return j, nil
	}
	j, err := s.store.JobByRequest(ctx, requestID)
	if errors.Is(err, ErrNotFound) || (err == nil && j.AccountID != accountID) {
		return Job{}, apierr.New(apierr.NotFound)
	}
	if err != nil {
		return Job{}, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	s.finals.keep(j)
	return s.live(j), nil
}

// GetByID reads a job by its job id within an account.
func (s *Service) GetByID(ctx context.Context, accountID, id string) (Job, error) {
	j, err := s.store.Job(ctx, accountID, id)
	if errors.Is(err, ErrNotFound) {
		return Job{}, apierr.New(apierr.NotFound)
	}
	if err != nil {
		return Job{}, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return s.live(j), nil
}

// List reads an account's jobs, newest first.
func (s *Service) List(ctx context.Context, accountID string, before time.Time, limit int) ([]Job, error) {
	js, err := s.store.ListJobs(ctx, accountID, before, limit)
	if err != nil {
		return nil, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return js, nil
}

// QueuePosition is the number of requests ahead of a queued job.
func (s *Service) QueuePosition(ctx context.Context, j Job) int {
	n, err := s.store.QueuePosition(ctx, j)
	if err != nil {
		s.log.Warn("queue position", "err", err)
	}
	return n
}

// live overlays the in-memory logs and progress of a job running in this process.
func (s *Service) live(j Job) Job {
	s.mu.Lock()
	rj := s.running[j.RequestID]
	s.mu.Unlock()
	if rj != nil && !j.Settled() {
		rj.mu.Lock()
		j.Logs = append([]LogLine(nil), rj.logs...)
		j.Progress = rj.progress
		rj.mu.Unlock()
	}
	return j
}

// Wait holds until the job settles or timeout passes; it answers the latest job and whether
// the wait ran out.
func (s *Service) Wait(ctx context.Context, accountID, requestID string, timeout time.Duration) (Job, bool, error) {
	ch, unsub := s.broker.subscribe(requestID)
	defer unsub()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	if j, timedOut, ok, err := s.waitRunning(ctx, accountID, requestID, deadline.C, poll.C); ok {
		return j, timedOut, err
	}
	for {
		j, err := s.Get(ctx, accountID, requestID)
		if err != nil {
			return Job{}, false, err
		}
		if j.Settled() {
			return j, false, nil
		}
		select {
		case <-ctx.Done():
			return j, true, ctx.Err()
		case <-deadline.C:
			return j, true, nil
		case <-ch:
		case <-poll.C:
		}
	}
}

// Changes returns a channel that is signalled when the job changes in this process, and a
// function to stop listening. Streams also poll.
func (s *Service) Changes(requestID string) (<-chan struct{}, func()) {
	return s.broker.subscribe(requestID)
}

// newRequestID is a version 7 UUID: the first 48 bits are the time in milliseconds, the rest
// random. Ids made in order sit side by side in every index that holds them, so the jobs of one
// COMMIT write a few index pages rather than one page each, and an index of millions of ids
// takes its inserts at its end instead of on pages long out of the cache.
func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = (b[6] & 0x0f) | 0x70
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUint32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
