package webhooks

import (
	"context"
	"errors"
	"time"
)

// Clock tells the time; tests inject a fake one.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Store errors.
var (
	// ErrNotFound: no such endpoint or delivery (or not the caller's account).
	ErrNotFound = errors.New("webhooks: not found")
	// ErrTooManyWebhooks: the account already has MaxNotDead endpoints that are not dead
	// (409 too_many_webhooks carrying `limit`).
	ErrTooManyWebhooks = errors.New("webhooks: too many webhooks")
)

// EndpointStatus is the state of a registered endpoint (spec 01 "Webhook endpoint status").
type EndpointStatus string

const (
	StatusPending  EndpointStatus = "pending"  // challenge not yet passed; nothing queued
	StatusActive   EndpointStatus = "active"   // receives events
	StatusDisabled EndpointStatus = "disabled" // ten consecutive failures; events queue (held)
	StatusDead     EndpointStatus = "dead"     // answered 410; nothing new queued
)

// Disabled reasons.
const (
	ReasonTooManyFailures = "too_many_failures"
	ReasonEndpointGone    = "endpoint_gone"
)

// Verification is the outcome of a failed challenge, kept on the endpoint and shown in the
// record. Body is the first 200 characters of the answer with the nonce blanked out.
type Verification struct {
	Reason     string    `json:"reason"` // nonce_not_echoed, status_<code>, timeout, dns_failure, tls_failure, connection_failed, blocked_address, url_refused, no_signing_key
	StatusCode *int      `json:"status_code"`
	Body       string    `json:"body"`
	CheckedAt  time.Time `json:"checked_at"`
}

// Endpoint is a registered webhook endpoint as stored.
type Endpoint struct {
	ID                  string
	Account             string
	URL                 string
	Products            []string // nil: every product
	Status              EndpointStatus
	CreatedAt           time.Time
	Verified            bool
	VerifiedAt          *time.Time
	ConsecutiveFailures int
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	LastStatusCode      *int
	DisabledReason      string // "", too_many_failures, endpoint_gone
	Verification        *Verification
	DeadAt              *time.Time // when it answered 410
}

// DeliveryStatus is the state of one delivery row.
type DeliveryStatus string

const (
	DeliveryScheduled DeliveryStatus = "scheduled" // to be attempted at NextAttemptAt
	DeliveryHeld      DeliveryStatus = "held"      // queued against a disabled or dead endpoint
	DeliveryDelivered DeliveryStatus = "delivered" // a 2xx was received (closed)
	DeliveryFailed    DeliveryStatus = "failed"    // closed without success; see CloseReason
)

// Close reasons of a failed delivery.
const (
	CloseRejected          = "rejected"           // a 4xx other than 408/429 (or 410 on a per-request URL)
	CloseAttemptsExhausted = "attempts_exhausted" // seven attempts failed
	CloseHeldPastWindow    = "held_past_window"   // older than 72 hours when it could have been sent
	CloseEndpointGone      = "endpoint_gone"      // the attempt answered 410
	CloseURLRefused        = "url_refused"        // the stored URL no longer passes the URL policy
)

// Delivery is one event (or per-request callback) for one destination: a durable row whose
// ID is the stable Svc-Delivery value.
type Delivery struct {
	ID             string
	EndpointID     string // "" for a per-request webhook
	Account        string
	EventID        string // evt_<job id>_<status>
	EventType      string // job.succeeded, job.failed, job.cancelled
	JobID          string
	RequestID      string // X-Alt-Webhook-Request-Id
	URL            string // per-request destination; "" for registered (the endpoint's URL is used)
	Body           []byte // signed as is on every attempt
	Status         DeliveryStatus
	Attempts       int
	NextAttemptAt  time.Time
	CreatedAt      time.Time // start of the 72-hour window
	LastAttemptAt  *time.Time
	LastStatusCode *int
	LastError      string
	CloseReason    string
	ClosedAt       *time.Time
}

// CreateEndpointParams creates a pending endpoint.
type CreateEndpointParams struct {
	ID         string
	Account    string
	URL        string
	Products   []string // nil: every product
	Now        time.Time
	MaxNotDead int // refuse with ErrTooManyWebhooks when the account already has this many not dead
}

// RecordChallengeParams records a challenge's outcome.
type RecordChallengeParams struct {
	EndpointID   string
	Now          time.Time
	Passed       bool
	Verification *Verification // on failure
	// On a pass, held deliveries created before RetainFrom close as held_past_window, and the
	// others become scheduled oldest first (created_at, then id): the i-th (from 0) at
	// Now + i*ReleaseSpacing.
	RetainFrom     time.Time
	ReleaseSpacing time.Duration
	// MaxNotDead: a pass that would bring a dead endpoint back while the account already has
	// this many not dead is refused ErrTooManyWebhooks, and the endpoint stays dead.
	MaxNotDead int
}

// ChallengeRecord is what RecordChallenge did.
type ChallengeRecord struct {
	Endpoint Endpoint
	Released int // held deliveries scheduled again
	Expired  int // held deliveries closed held_past_window
}

// NewDelivery is a delivery to insert.
type NewDelivery struct {
	ID         string // deterministic per destination per event: inserting it twice is a no-op
	EndpointID string // "" for a per-request webhook
	Account    string
	EventID    string
	EventType  string
	JobID      string
	RequestID  string
	URL        string // per-request only
	Body       []byte
}

// EnqueueParams inserts deliveries.
type EnqueueParams struct {
	Now        time.Time
	Deliveries []NewDelivery
}

// ClaimParams takes due deliveries for sending.
type ClaimParams struct {
	Now         time.Time
	Limit       int       // at most this many rows
	PerEndpoint int       // at most this many rows of one endpoint (per-request rows are not capped)
	LeaseUntil  time.Time // claimed rows get next_attempt_at = LeaseUntil so no other sweep takes them
	EndpointID  string    // when set, only this endpoint's rows
	DeliveryID  string    // when set, only this row (if it is due)
}

// EndpointEffect is what an attempt does to its endpoint's counters.
type EndpointEffect int

const (
	EffectNone    EndpointEffect = iota // a host pause or a per-request delivery
	EffectSuccess                       // consecutive_failures = 0, last_success_at, last_status_code
	EffectFailure                       // consecutive_failures+1, last_failure_at, last_status_code; disable at DisableAfter
	EffectGone                          // 410: dead (endpoint_gone) at once
)

// AttemptParams records an attempt (or a pause) of one claimed delivery and its effect on the
// endpoint.
type AttemptParams struct {
	DeliveryID    string
	EndpointID    string
	Now           time.Time
	Attempted     bool // false for a pause: Attempts unchanged, LastAttemptAt unchanged
	StatusCode    *int
	Error         string
	Status        DeliveryStatus // new status of the delivery
	NextAttemptAt time.Time      // when Status is scheduled
	CloseReason   string         // when Status is failed
	Effect        EndpointEffect
	DisableAfter  int // consecutive failures that disable an active endpoint
}

// ApplyEffect applies an attempt's effect to its endpoint's counters and state, and says
// whether the endpoint stopped taking deliveries (its scheduled ones are then held).
func ApplyEffect(e *Endpoint, p AttemptParams) (hold bool) {
	now := p.Now
	switch p.Effect {
	case EffectSuccess:
		e.ConsecutiveFailures, e.LastSuccessAt, e.LastStatusCode = 0, &now, p.StatusCode
	case EffectFailure, EffectGone:
		e.ConsecutiveFailures++
		e.LastFailureAt = &now
		if p.StatusCode != nil {
			e.LastStatusCode = p.StatusCode
		}
		if p.Effect == EffectGone && e.Status != StatusDead {
			e.Status, e.DisabledReason, e.DeadAt = StatusDead, ReasonEndpointGone, &now
			return true
		}
		if e.Status == StatusActive && p.DisableAfter > 0 && e.ConsecutiveFailures >= p.DisableAfter {
			e.Status, e.DisabledReason = StatusDisabled, ReasonTooManyFailures
			return true
		}
	}
	return false
}

// SweepState is what a sweep's senders start from (Store.SweepState).
type SweepState struct {
	Endpoints map[string]Endpoint  // by id
	Paused    map[string]time.Time // host → when its pause ends, for the hosts paused
}

// AttemptBatch is attempts recorded together (Store.RecordAttempts).
type AttemptBatch struct {
	Now      time.Time // when the hosts' counts are taken
	Attempts []AttemptParams
	Hosts    []HostTally // the attempts made, by host
}

// BatchRecorded is what an AttemptBatch left.
type BatchRecorded struct {
	Attempts        []Recorded  // one per attempt, in order
	HostPausedUntil []time.Time // one per host tally: when its pause ends (zero: not paused)
}

// Recorded is what recording one attempt left: its endpoint after the change, or Gone.
type Recorded struct {
	Endpoint Endpoint
	Gone     bool // the delivery (or its endpoint) was deleted meanwhile
}

// ExpireParams closes old deliveries.
type ExpireParams struct {
	Now           time.Time
	CreatedBefore time.Time
}

// ListDeliveriesParams filters ListDeliveries; empty fields do not filter.
type ListDeliveriesParams struct {
	EndpointID string
	Account    string
	JobID      string
}

// Store is the persistence the webhooks package needs. Every method is one transaction.
// MemStore is the reference implementation; a SQL implementation mirrors its behaviour.
type Store interface {
	// CreateEndpoint inserts a pending, unverified endpoint, counting the account's endpoints
	// that are not dead in the same transaction: ErrTooManyWebhooks at MaxNotDead.
	CreateEndpoint(ctx context.Context, p CreateEndpointParams) (Endpoint, error)
	// GetEndpoint returns one endpoint or ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	// ListEndpoints returns the account's endpoints, oldest first.
	ListEndpoints(ctx context.Context, account string) ([]Endpoint, error)
	// RecordChallenge stores a challenge outcome. On a pass the endpoint becomes active and
	// verified (verified_at Now, verification, disabled_reason, dead_at cleared,
	// consecutive_failures 0) and its held deliveries are released as RecordChallengeParams
	// says. On a failure only verification changes: the status stays as it was. A pass that
	// would bring a dead endpoint back counts the account's endpoints not dead in the same
	// transaction, as CreateEndpoint does: ErrTooManyWebhooks at MaxNotDead.
	// ErrNotFound when the endpoint is gone.
	RecordChallenge(ctx context.Context, p RecordChallengeParams) (ChallengeRecord, error)
	// DeleteEndpoint removes the account's endpoint and its open (scheduled or held)
	// deliveries; existed is false when there was none.
	DeleteEndpoint(ctx context.Context, account, id string) (existed bool, err error)
	// EnqueueDeliveries inserts deliveries, skipping ids that exist. A registered delivery is
	// inserted scheduled (next_attempt_at Now) when its endpoint is active, held when it is
	// disabled, and not at all when it is pending, dead or missing, judged in the same
	// transaction. Per-request deliveries are inserted scheduled. Returns the inserted ids.
	EnqueueDeliveries(ctx context.Context, p EnqueueParams) ([]string, error)
	// ClaimDue returns scheduled deliveries due at Now, earliest next_attempt_at first (then
	// created_at, id), capped per endpoint, and leases them until LeaseUntil
	// (SELECT … FOR UPDATE SKIP LOCKED, then UPDATE next_attempt_at).
	ClaimDue(ctx context.Context, p ClaimParams) ([]Delivery, error)
	// RecordAttempts stores a batch in one transaction: the attempts' outcomes, in order, each
	// applying its Effect to its endpoint, and the attempts made counted against their hosts.
	// When an endpoint turns disabled (active and ConsecutiveFailures reaching DisableAfter)
	// or dead (EffectGone), every scheduled delivery of it becomes held, the attempt's own
	// included when it was to be retried. A host reaching a threshold within the hour
	// (HostMaxDeliveriesPerHour attempts, HostMaxFailuresPerHour failures) is paused for
	// HostPause and its counts start afresh. Answers, for each attempt, the endpoint after the
	// change (zero for per-request) or Gone when the delivery or its endpoint was deleted
	// meanwhile, and for each host tally when its host's pause ends.
	RecordAttempts(ctx context.Context, b AttemptBatch) (BatchRecorded, error)
	// SweepState reads what a sweep's senders start from, together: the endpoints of ids
	// (those that exist) and the pause of every host paused at now.
	SweepState(ctx context.Context, ids []string, now time.Time) (SweepState, error)
	// ExpireOld closes every scheduled or held delivery created before CreatedBefore as
	// failed/held_past_window; returns how many.
	ExpireOld(ctx context.Context, p ExpireParams) (int, error)
	// GetDelivery returns one delivery or ErrNotFound.
	GetDelivery(ctx context.Context, id string) (Delivery, error)
	// ListDeliveries returns deliveries matching p, oldest first (created_at, then id).
	ListDeliveries(ctx context.Context, p ListDeliveriesParams) ([]Delivery, error)
	// RecentDeliveries returns the endpoint's latest deliveries, newest first (created_at,
	// then id, descending), at most limit: one indexed read whatever the endpoint's history.
	RecentDeliveries(ctx context.Context, endpointID string, limit int) ([]Delivery, error)
}
