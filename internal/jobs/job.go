package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
)

// QueueStatus is the queue-protocol status (spec 01 "Queue status").
type QueueStatus string

const (
	InQueue    QueueStatus = "IN_QUEUE"
	InProgress QueueStatus = "IN_PROGRESS"
	Completed  QueueStatus = "COMPLETED"
)

// Outcome is the job record's status once settled (DESIGN.md decision 5): a failed or
// cancelled job also reads COMPLETED on the queue protocol.
type Outcome string

const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed"
	Cancelled Outcome = "cancelled"
)

// Priority orders a queue: low goes behind every normal request.
type Priority string

const (
	Normal Priority = "normal"
	Low    Priority = "low"
)

// Waiting counts the jobs waiting in one model's queue, by priority.
type Waiting struct{ Normal, Low int }

// Ahead is how many of them a newcomer of priority p waits behind: a normal request goes
// ahead of every low one, a low one behind all (spec 01, X-Svc-Priority).
func (w Waiting) Ahead(p Priority) int {
	if p == Low {
		return w.All()
	}
	return w.Normal
}

// All counts every waiting job, whatever its priority.
func (w Waiting) All() int { return w.Normal + w.Low }

// Add counts one more waiting job of priority p.
func (w *Waiting) Add(p Priority) {
	if p == Low {
		w.Low++
	} else {
		w.Normal++
	}
}

// MintedKey is the idempotency key the service mints for a submit sent without one: "k" and the
// job's request id, so that a store may keep it as nothing and give it back from the request id
// (a minted key then costs no entry in the index of keys).
func MintedKey(requestID string) string { return "k" + requestID }

// MintedRequestID is the request id a key minted by MintedKey was minted from; false for a key
// not of that shape ("k" and a request id, newRequestID's form), which no minted key is.
func MintedRequestID(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, "k")
	if !ok || len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return "", false
	}
	return id, true
}

// Job is one request to a model.
type Job struct {
	ID             string // <product>_k<time-ordered random>, minted fresh: unique across accounts (DESIGN 37)
	AccountID      string
	KeyID          string
	RequestID      string // queue request id, unique
	Model          string // slug
	Product        string
	IdempotencyKey string
	Input          json.RawMessage
	Status         QueueStatus
	Outcome        Outcome // empty until settled
	ErrorCode      string
	ErrorDetail    []runners.Violation
	ErrorFields    map[string]any // a refusal at its turn: the code's carried fields as they stood then
	ErrorMessage   string
	Quoted         int64 // credits_quoted
	Reserved       int64 // credits taken at charge (0 while queued or when covered)
	Charged        int64 // credits_charged: Reserved until settled, then the settled cost
	Coverage       *ledger.Coverage
	Priority       Priority
	StartBy        *time.Time // a queued job not started by then fails request_timeout
	Webhook        string     // per-request webhook URL
	ProviderJobID  string
	Dispatched     bool // false while dispatch is unresolved
	CancelAsked    bool
	Result         *runners.Result
	Logs           []LogLine
	Metrics        map[string]float64
	Progress       float64
	LeaseOwner     string
	LeaseUntil     *time.Time
	Attempts       int
	CreatedAt      time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
	// BalanceAfter is the account's balance right after the job's last credit movement (its
	// charge, or the refund of its settlement), known to the process that charged and settled
	// it, for a request held until the job settles (credits_remaining, JOB-15); nil on a job
	// read from the store.
	BalanceAfter *int64 `json:"-"`
}

// LogLine is one element of `logs` (spec: "not shown"; designed after fal's queue logs).
type LogLine struct {
	Message   string    `json:"message"`
	Level     string    `json:"level"`
	Source    string    `json:"source"`
	Timestamp time.Time `json:"timestamp"`
}

// Settled reports whether the job has an outcome.
func (j Job) Settled() bool { return j.Status == Completed }

// ChargedState is what a settled job left charged, as an error body's `charged` says it: its
// charge stands, it was given back (credits or a pass's use), or it was never charged.
func (j Job) ChargedState() apierr.Charged {
	switch {
	case j.Charged > 0:
		return apierr.ChargedStands
	case j.Reserved > 0 || j.Coverage != nil:
		return apierr.ChargedRefunded
	}
	return apierr.ChargedNo
}

// Event is one outbox row: a settled job's notification, written in the settling transaction.
type Event struct {
	ID        string // evt_<job id>_<status>
	AccountID string
	JobID     string
	RequestID string
	Type      string // job.succeeded, job.failed, job.cancelled
	Product   string
	Status    Outcome
	ErrorCode string
	Charged   int64
	Reserved  int64
	Webhook   string // per-request webhook URL, if any
	CreatedAt time.Time
}

// ErrNotFound is returned for a missing job.
var ErrNotFound = errors.New("jobs: not found")

// ErrSettled is returned by UpdateJob for a job that is settled already: a settled job never
// changes again (a guarded transition, whatever the caller read).
var ErrSettled = errors.New("jobs: job already settled")

// ErrDuplicate is returned by InsertJob when the account already has a job with the id.
var ErrDuplicate = errors.New("jobs: duplicate job id")

// ErrNotRecorded wraps an insert's failure other than a duplicate, when the store reports it
// from the transaction rather than from InsertJob (see Tx.InsertJob).
var ErrNotRecorded = errors.New("jobs: the job was not recorded")

// Closing is a settled job and its event, for Store.CloseJobs. A chat turn has no event (nil).
type Closing struct {
	Job   Job
	Event *Event
}

// Store is the persistence jobs needs. It is also the ledger's store: a job's credits move
// through ledger.Service inside the job's own transaction.
type Store interface {
	ledger.Store
	InTx(ctx context.Context, fn func(Tx) error) error
	// InOneStatement is InTx for a function that makes at most one statement; the store may
	// run it without a transaction around it (one statement is atomic on its own).
	InOneStatement(ctx context.Context, fn func(Tx) error) error
	// CloseJobs writes settled jobs with their events (where they have one), each update
	// guarded as UpdateJob's, in one statement (its own transaction) where the store can, and
	// reports which updates took (false: the job was settled already, and its event was not
	// written). On an error nothing was written.
	CloseJobs(ctx context.Context, cs []Closing) ([]bool, error)
	JobByRequest(ctx context.Context, requestID string) (Job, error)
	Job(ctx context.Context, accountID, id string) (Job, error)
	// JobByIdempotencyKey reads the account's job submitted under key, whatever its product.
	JobByIdempotencyKey(ctx context.Context, accountID, key string) (Job, error)
	// ListJobs returns an account's jobs created before `before`, newest first.
	ListJobs(ctx context.Context, accountID string, before time.Time, limit int) ([]Job, error)
	// SearchJobs returns a page of an account's jobs narrowed by q, newest first (created_at,
	// then id), without input, result, logs or metrics.
	SearchJobs(ctx context.Context, accountID string, q Search) ([]Job, error)
	// Queued returns waiting jobs of a model in queue order (normal before low, oldest first).
	Queued(ctx context.Context, model string, limit int) ([]Job, error)
	// Stale returns jobs in progress whose lease ran out before now.
	Stale(ctx context.Context, now time.Time, limit int) ([]Job, error)
	// Overdue returns queued jobs whose StartBy passed.
	Overdue(ctx context.Context, now time.Time, limit int) ([]Job, error)
	// CountWaiting counts the jobs waiting for a slot, every model together.
	CountWaiting(ctx context.Context) (int, error)
	// QueuePosition counts jobs ahead of j in its model's queue.
	QueuePosition(ctx context.Context, j Job) (int, error)
	// Heartbeat extends the leases of the given running jobs held by owner and returns the
	// ids whose cancellation was asked meanwhile.
	Heartbeat(ctx context.Context, owner string, requestIDs []string, until time.Time) (cancel []string, err error)
	// AppendProgress stores logs, metrics and progress of a running job.
	AppendProgress(ctx context.Context, requestID string, logs []LogLine, progress float64) error
}

// Tx is one transaction over the job tables; it is the ledger's transaction too.
type Tx interface {
	ledger.Tx
	JobByRequestForUpdate(ctx context.Context, requestID string) (Job, error)
	// ClaimQueued locks and returns the first waiting job of model in queue order that no
	// other transaction holds; ErrNotFound when there is none.
	ClaimQueued(ctx context.Context, model string) (Job, error)
	// UpdateJob writes j's state over a job not yet settled (ErrSettled otherwise).
	UpdateJob(ctx context.Context, j Job) error
	// CloseJob is UpdateJob of a settled job followed, when ev is not nil, by InsertEvent of
	// its event, in one round trip where the store can.
	CloseJob(ctx context.Context, j Job, ev *Event) error
	// CountQueuedOf counts the jobs waiting for a slot of each model (reading only those), by
	// priority, in one statement where the store can; a model without waiting jobs may be left
	// out. The models of lock (some of models) are counted under a lock of each held until the
	// transaction ends, where other processes' transactions could count them at once
	// (PostgreSQL; SQLite's one writer holds the database already): a transaction that judges
	// a model's room by its count sees every job another committed under the lock, and no
	// other commits one between its count and its own insert.
	CountQueuedOf(ctx context.Context, models, lock []string) (map[string]Waiting, error)
	// InsertJobs stores js, in one statement where the store can; ErrDuplicate when an account
	// already has one's job id or idempotency key. The store may write the rows with the
	// transaction's next statement or its COMMIT (one round trip fewer): the failure is then
	// that statement's, or InTx's, error: ErrDuplicate, or one wrapping ErrNotRecorded, and it
	// is every job's. So InsertJobs comes last in a transaction, or is followed only by
	// statements whose failure fails it as a whole.
	InsertJobs(ctx context.Context, js []Job) error
	// InsertEvent writes the outbox row unless one with the same id exists (a job settled
	// twice notifies once).
	InsertEvent(ctx context.Context, e Event) error
}
