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
}

// DefaultConfig is the configuration as shipped.
func DefaultConfig() Config {
	return Config{
		Owner: "proc_" + randomHex(6), LeaseTTL: 15 * time.Second, HeartbeatEvery: 5 * time.Second, SweepEvery: time.Second,
		ModelConcurrency: 4, MaxAttempts: 3,
		InFlight: map[auth.Plan]int{auth.Free: 0, auth.Pro: 10, auth.Max: 25, auth.Ultimate: 50},
	}
}

// EnvFunc gives a runner its environment for one job.
type EnvFunc func(j Job, report runners.Reporter) runners.Env

// Service runs the job state machine.
type Service struct {
	store   Store
	catalog *catalog.Catalog
	runners runners.Registry
	env     EnvFunc
	now     func() time.Time
	log     *slog.Logger
	cfg     Config
	rand    func() uint32

	broker *broker
	seats  *Seats

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
}

// New wires the service. Call Run to start the background loops.
func New(store Store, cat *catalog.Catalog, reg runners.Registry, env EnvFunc, seats *Seats, now func() time.Time, log *slog.Logger, cfg Config) *Service {
	return &Service{store: store, catalog: cat, runners: reg, env: env, now: now, log: log, cfg: cfg, seats: seats,
		rand: randomUint32, broker: newBroker(), slots: map[string]int{}, running: map[string]*runningJob{},
		base: context.Background(), wake: make(chan struct{}, 1)}
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

// Submit validates, quotes, decides coverage, checks the key's ceiling and the balance,
// reserves, inserts and dispatches: everything that touches credits is one transaction.
func (s *Service) Submit(ctx context.Context, r SubmitRequest) (SubmitResult, error) {
	m, p := r.Model, r.Principal
	now := s.now()
	key := r.IdempotencyKey
	if key == "" {
		key = "k" + randomHex(12)
	}
	id := m.Product + "_" + key
	// The same key answers the first request, whatever the body says now (DESIGN 25).
	if prev, err := s.store.Job(ctx, p.Account.ID, id); err == nil {
		return SubmitResult{Job: prev, Replayed: true}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return SubmitResult{}, apierr.New(apierr.JobReadFailed).Wrap(err)
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
	err = s.store.InTx(ctx, func(tx Tx) error {
		claimed = false
		a, err := tx.AccountForUpdate(ctx, p.Account.ID)
		if err != nil {
			return err
		}
		// The first charge of a new month sees that month's allowance.
		if a, err = tx.GrantAllowanceDue(ctx, a, now); err != nil {
			return err
		}
		if prev, err := tx.JobForUpdate(ctx, a.ID, id); err == nil {
			res.Job, res.Replayed, res.Balance = prev, true, a.Balance
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		if limit, ok := s.cfg.InFlight[a.Plan]; ok {
			n, err := tx.CountInFlight(ctx, a.ID)
			if err != nil {
				return err
			}
			if n >= limit {
				return apierr.New(apierr.TooManyJobs, "limit", limit, "plan", string(a.Plan), "tier", nil)
			}
		}
		passes, err := tx.Passes(ctx, a.ID)
		if err != nil {
			return err
		}
		cov := ledger.Cover(passes, m.Slug, q.Credits, now)
		if a.PassOnly && !cov.Covered() {
			if cov != nil && cov.Miss != nil && cov.Miss.Why == "shape" {
				return apierr.New(apierr.PassDoesNotCover, "pass", cov.Miss.Pass, "why", cov.Miss.Why)
			}
			return apierr.New(apierr.ModelNotInPlan, "plan", string(a.Plan))
		}
		if r.CoveredOnly && !cov.Covered() {
			return apierr.New(apierr.NotCovered)
		}
		job.Coverage = cov
		if !cov.Covered() {
			k, err := tx.Key(ctx, p.Key.ID)
			if err != nil {
				return err
			}
			if err := auth.CheckSpend(k.Ceiling, a.MonthlyAllowance, k.SpentIn(now), q.Credits); err != nil {
				return err
			}
			if a.Balance < q.Credits {
				return apierr.New(apierr.InsufficientCredits, "required", q.Credits, "balance", a.Balance)
			}
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
		bal, err := s.charge(ctx, tx, &job, a.Balance, now)
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
	})
	if err != nil {
		if claimed {
			s.releaseSlot(m.Slug)
		}
		if errors.Is(err, ErrDuplicate) { // lost a race on the same key: answer the winner
			if prev, e := s.store.Job(ctx, p.Account.ID, id); e == nil {
				return SubmitResult{Job: prev, Replayed: true}, nil
			}
		}
		if _, ok := apierr.As(err); ok {
			return SubmitResult{}, err
		}
		return SubmitResult{}, apierr.New(apierr.CreditReserveFailed).Wrap(err)
	}
	if res.Replayed {
		if claimed {
			s.releaseSlot(m.Slug)
		}
		return SubmitResult{Job: res.Job, Replayed: true, Balance: res.Balance}, nil
	}
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

// charge takes the quote (unless a pass pays) and moves the job to IN_PROGRESS under this
// process's lease.
func (s *Service) charge(ctx context.Context, tx Tx, j *Job, balance int64, now time.Time) (int64, error) {
	if j.Coverage.Covered() {
		if err := tx.UsePass(ctx, j.Coverage.PassID); err != nil {
			return 0, err
		}
	} else if j.Reserved == 0 && j.Quoted > 0 {
		bal, err := tx.AddLedgerEntry(ctx, ledger.Entry{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.ID, Kind: ledger.Charge, Amount: -j.Quoted, At: now})
		if err != nil {
			return 0, err
		}
		if err := tx.AddKeySpend(ctx, j.KeyID, auth.Period(now), j.Quoted); err != nil {
			return 0, err
		}
		balance = bal
		j.Reserved, j.Charged = j.Quoted, j.Quoted
	}
	lease := now.Add(s.cfg.LeaseTTL)
	j.Status, j.StartedAt, j.LeaseOwner, j.LeaseUntil = InProgress, &now, s.cfg.Owner, &lease
	j.Attempts++
	j.ProviderJobID = j.RequestID
	return balance, nil
}

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
	j, err := s.store.JobByRequest(ctx, requestID)
	if errors.Is(err, ErrNotFound) || (err == nil && j.AccountID != accountID) {
		return Job{}, apierr.New(apierr.NotFound)
	}
	if err != nil {
		return Job{}, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
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

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = (b[6] & 0x0f) | 0x40
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
