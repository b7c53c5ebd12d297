package webhooks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/batch"
)

// Ladder is the gap before attempts 2 to 7 (spec 02 "Retries and pausing" #3); each gap is a
// floor to which up to JitterFraction is added.
var Ladder = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour, 3 * time.Hour, 8 * time.Hour, 24 * time.Hour}

// Delivery policy figures.
const (
	MaxAttempts           = 7
	JitterFraction        = 0.2
	DefaultSweepInterval  = 5 * time.Minute
	DefaultRetention      = 72 * time.Hour
	DefaultDisableAfter   = 10
	DefaultPerEndpointRun = 100             // queued events of one endpoint sent per sweep
	DefaultReleaseSpacing = 3 * time.Second // 20 a minute after a passing re-challenge
	DefaultMaxEndpoints   = 5
	DefaultClaimBatch     = 1000
	DefaultWorkers        = 32
	// DefaultGroupBudget is how long one endpoint's deliveries are sent in one sweep: past
	// it the rest wait for the next sweep, so a slow receiver holds up no one else's for long.
	DefaultGroupBudget = 2 * TotalTimeout
)

// RetryGap returns the gap after failed attempt n (1-based) with jitter r in [0,1), and false
// when n was the last attempt.
func RetryGap(n int, r float64) (time.Duration, bool) {
	if n < 1 || n >= MaxAttempts {
		return 0, false
	}
	base := Ladder[n-1]
	return base + time.Duration(float64(base)*JitterFraction*r), true
}

// Config holds what Service and Engine need. Store and Keys are required.
type Config struct {
	Store  Store
	Keys   *KeyRing
	Sender *Sender   // nil: NewSender with Policy
	Clock  Clock     // nil: SystemClock
	Policy URLPolicy // zero: production; AllowLoopbackForTests in tests
	Scheme Scheme    // "": SchemeEd25519
	Secret []byte    // deployment secret: whsec_ derivation under SchemeHMAC
	// PublicBaseURL is the account API base; verify_keys is PublicBaseURL + /.well-known/jwks.json.
	PublicBaseURL string
	Jitter        func() float64 // [0,1); nil: math/rand/v2
	Rand          io.Reader      // ids and nonces; nil: crypto/rand
	Logger        *slog.Logger   // nil: discard
	Metrics       Recorder       // nil: attempts are not counted

	MaxEndpoints   int           // not-dead endpoints per account (5)
	SweepInterval  time.Duration // 5 min
	Retention      time.Duration // 72 h
	DisableAfter   int           // 10
	PerEndpointRun int           // 100
	ReleaseSpacing time.Duration // 3 s
	ClaimBatch     int           // 1000
	Workers        int           // 32
	GroupBudget    time.Duration // how long one endpoint's claimed deliveries are sent per sweep
	Lease          time.Duration // how long a claimed row is hidden from other sweeps
	// RecordBatch configures the attempt recorder (recorder.go); zero: batch.DefaultConfig.
	RecordBatch batch.Config
}

func (c *Config) fill() error {
	if c.Store == nil || c.Keys == nil {
		return errors.New("webhooks: Config needs Store and Keys")
	}
	if c.Sender == nil {
		c.Sender = NewSender(SenderConfig{Policy: c.Policy})
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	switch c.Scheme {
	case "":
		c.Scheme = SchemeEd25519
	case SchemeEd25519:
	case SchemeHMAC:
		if len(c.Secret) < 16 {
			return errors.New("webhooks: SchemeHMAC needs a deployment secret of at least 16 bytes")
		}
	default:
		return fmt.Errorf("webhooks: unknown signature scheme %q", c.Scheme)
	}
	if c.Jitter == nil {
		c.Jitter = mrand.Float64
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = nopRecorder{}
	}
	setDefault(&c.MaxEndpoints, DefaultMaxEndpoints)
	setDefault(&c.SweepInterval, DefaultSweepInterval)
	setDefault(&c.Retention, DefaultRetention)
	setDefault(&c.DisableAfter, DefaultDisableAfter)
	setDefault(&c.PerEndpointRun, DefaultPerEndpointRun)
	setDefault(&c.ReleaseSpacing, DefaultReleaseSpacing)
	setDefault(&c.ClaimBatch, DefaultClaimBatch)
	setDefault(&c.Workers, DefaultWorkers)
	if c.RecordBatch == (batch.Config{}) {
		c.RecordBatch = batch.DefaultConfig()
	}
	setDefault(&c.GroupBudget, DefaultGroupBudget)
	// A claimed group is sent for at most GroupBudget, its last attempt bounded by TotalTimeout:
	// a row claimed by a process that then died is due again soon after.
	setDefault(&c.Lease, c.GroupBudget+4*TotalTimeout)
	return nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Engine sends due deliveries: a sweep (RunOnce) every SweepInterval, sooner when a delivery
// it knows of falls due before then (dueAt), woken early by Wake. Several engines may share
// one Store: rows are leased when claimed.
type Engine struct {
	cfg      Config
	wake     chan struct{}
	recorder *batch.Batcher[*recording] // attempt records written together (recorder.go)

	mu      sync.Mutex
	soonest time.Time // the earliest moment a delivery is known to fall due; zero: none known
}

// NewEngine builds the delivery engine.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, wake: make(chan struct{}, 1)}
	e.recorder = e.newRecorder()
	return e, nil
}

// Wake asks a running Run loop to sweep now (new events were queued).
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run sweeps at once, then when the earliest delivery it knows of falls due (dueAt), at
// most SweepInterval after a sweep, or on Wake, and again as soon as a sweep that claimed
// deliveries ends (more may be due), until ctx ends. The attempt recorder runs under it.
//
// A sweep does not wait for the one before it: a receiver that hangs holds its own attempts
// (and the sweep that sent them) for up to its timeout, while the deliveries that fall due
// meanwhile, other accounts' among them, go out in the next sweep at once. What a sweep
// claimed is leased, so sweeps under way never send one delivery twice. At most MaxSweeps run
// at once; a wake while they all run is taken when one ends.
func (e *Engine) Run(ctx context.Context) error {
	recorder := make(chan error, 1)
	go func() { recorder <- e.recorder.Run(ctx) }()
	defer func() { <-recorder }()
	// A process that stopped before this one started (a crash, a restart) left the deliveries
	// it claimed leased for at most Lease from now: the first sweep cannot take them.
	e.dueAt(e.cfg.Clock.Now().Add(e.cfg.Lease))
	t := time.NewTimer(e.cfg.SweepInterval)
	defer t.Stop()
	type swept struct {
		at      time.Time
		claimed int
		err     error
	}
	ended := make(chan swept, MaxSweeps)
	running, again := 0, true // again: a sweep is owed (at start, on a wake, after one that claimed)
	for {
		if again && running < MaxSweeps && ctx.Err() == nil {
			again, running = false, running+1
			go func(at time.Time) {
				stats, err := e.RunOnce(ctx, at)
				ended <- swept{at, stats.Claimed, err}
			}(e.cfg.Clock.Now())
		}
		select {
		case <-ctx.Done():
			for ; running > 0; running-- {
				<-ended
			}
			return nil
		case r := <-ended:
			running--
			if r.err != nil && ctx.Err() == nil {
				e.cfg.Logger.Error("webhooks: sweep failed", "err", r.err)
				// What it claimed and did not record stays leased until then.
				e.dueAt(r.at.Add(e.cfg.Lease))
			}
			if r.err == nil && r.claimed > 0 {
				again = true
			}
			t.Reset(e.untilDue(r.at, e.cfg.Clock.Now()))
		case <-t.C:
			again = true
		case <-e.wake:
			again = true
		}
	}
}

// MaxSweeps bounds the sweeps an engine runs at once (each sends on at most Workers
// connections).
const MaxSweeps = 4

// dueAt notes that a delivery falls due at at: a lease runs out, a retry's gap or a host's
// pause ends. Run sweeps then when it comes before the next interval. Only the earliest
// moment to come is kept: one later than it waits for a sweep at most SweepInterval apart;
// one past already (a release, due at once) is the next sweep's, which a sweep that claimed
// starts at once.
func (e *Engine) dueAt(at time.Time) {
	if !at.After(e.cfg.Clock.Now()) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.soonest.IsZero() || at.Before(e.soonest) {
		e.soonest = at
	}
}

// untilDue is how long Run waits, at now, after a sweep at sweptAt: until the earliest moment
// a delivery is known to fall due, at most SweepInterval. A moment at or before sweptAt was
// that sweep's to take, and is forgotten.
func (e *Engine) untilDue(sweptAt, now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.soonest.After(sweptAt) {
		e.soonest = time.Time{}
	}
	if e.soonest.IsZero() {
		return e.cfg.SweepInterval
	}
	return max(min(e.soonest.Sub(now), e.cfg.SweepInterval), 0)
}

// SweepStats counts what one sweep did.
type SweepStats struct {
	Claimed, Delivered, Retried, Failed, Held, Paused, Expired int
}

func (s *SweepStats) add(o SweepStats) {
	s.Claimed += o.Claimed
	s.Delivered += o.Delivered
	s.Retried += o.Retried
	s.Failed += o.Failed
	s.Held += o.Held
	s.Paused += o.Paused
	s.Expired += o.Expired
}

// RunOnce is one sweep at now: keeps the key ring on schedule, closes deliveries older than
// Retention (held_past_window), then claims due deliveries (at most PerEndpointRun per
// endpoint) and sends them, endpoints in parallel, each endpoint's oldest first.
func (e *Engine) RunOnce(ctx context.Context, now time.Time) (SweepStats, error) {
	var stats SweepStats
	if err := e.cfg.Keys.Maintain(ctx, now); err != nil {
		e.cfg.Logger.Error("webhooks: key rotation failed", "err", err)
	}
	n, err := e.cfg.Store.ExpireOld(ctx, ExpireParams{Now: now, CreatedBefore: now.Add(-e.cfg.Retention)})
	if err != nil {
		return stats, err
	}
	stats.Expired += n
	s, err := e.sendDue(ctx, now, "", e.cfg.ClaimBatch)
	stats.add(s)
	return stats, err
}

// sendDue claims and sends due deliveries (of one endpoint when endpointID is set).
func (e *Engine) sendDue(ctx context.Context, now time.Time, endpointID string, limit int) (SweepStats, error) {
	return e.sendClaimed(ctx, now, ClaimParams{Now: now, Limit: limit, PerEndpoint: e.cfg.PerEndpointRun,
		LeaseUntil: now.Add(e.cfg.Lease), EndpointID: endpointID})
}

// sendClaimed claims the due deliveries p selects and sends them.
func (e *Engine) sendClaimed(ctx context.Context, now time.Time, p ClaimParams) (SweepStats, error) {
	var stats SweepStats
	claimedAt := e.cfg.Clock.Now()
	claimed, err := e.cfg.Store.ClaimDue(ctx, p)
	if err != nil {
		return stats, err
	}
	stats.Claimed = len(claimed)
	var groups [][]Delivery
	index := map[string]int{}
	for _, d := range claimed {
		key := d.EndpointID
		if key == "" {
			key = "request:" + d.ID
		}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	if len(groups) == 0 {
		return stats, nil
	}
	var ids []string
	for _, g := range groups {
		if id := g[0].EndpointID; id != "" {
			ids = append(ids, id)
		}
	}
	state, err := e.cfg.Store.SweepState(ctx, ids, now)
	if err != nil {
		return stats, err
	}
	pauses := &hostPauses{until: state.Paused}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
		work = make(chan []Delivery)
	)
	for w := 0; w < min(e.cfg.Workers, len(groups)); w++ {
		wg.Go(func() {
			for g := range work {
				s, err := e.sendGroup(ctx, now, claimedAt, g, state.Endpoints, pauses)
				mu.Lock()
				stats.add(s)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	for _, g := range groups {
		work <- g
	}
	close(work)
	wg.Wait()
	return stats, errors.Join(errs...)
}

// hostPauses is the hosts' pauses a sweep knows: those read at its start, then those its
// attempts' counts started. Within a sweep (one now) a pause only begins.
type hostPauses struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (p *hostPauses) get(host string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until[host]
}

func (p *hostPauses) add(host string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until.After(p.until[host]) {
		p.until[host] = until
	}
}

// sendGroup sends one endpoint's claimed deliveries (or one per-request delivery) in order,
// starting from the endpoint as the sweep read it, for at most GroupBudget: what is left then
// is released, due at once, for the next sweep, which the engine starts as soon as this one
// ends. A group whose claim is too old to be sent within its lease is released whole.
func (e *Engine) sendGroup(ctx context.Context, now, claimedAt time.Time, group []Delivery, endpoints map[string]Endpoint, pauses *hostPauses) (SweepStats, error) {
	var stats SweepStats
	var ep *Endpoint
	if id := group[0].EndpointID; id != "" {
		got, ok := endpoints[id]
		if !ok {
			return stats, nil // deleted with its deliveries meanwhile
		}
		ep = &got
	}
	start := e.cfg.Clock.Now()
	if start.Sub(claimedAt) > e.cfg.Lease-e.cfg.GroupBudget-2*TotalTimeout {
		return stats, e.release(ctx, now, group)
	}
	for i, d := range group {
		if ctx.Err() != nil {
			return stats, ctx.Err()
		}
		if i > 0 && e.cfg.Clock.Now().Sub(start) >= e.cfg.GroupBudget {
			return stats, e.release(ctx, now, group[i:])
		}
		next, s, err := e.attempt(ctx, now, d, ep, pauses)
		stats.add(s)
		if err != nil {
			return stats, err
		}
		if ep != nil && !next.Gone && next.Endpoint.ID != "" {
			ep = &next.Endpoint
		}
	}
	return stats, nil
}

// attempt sends one claimed delivery and records the outcome (through the recorder). pauses
// holds the hosts' pauses the sweep knows; the pause counted with this attempt joins them.
func (e *Engine) attempt(ctx context.Context, now time.Time, d Delivery, ep *Endpoint, pauses *hostPauses) (outcome, SweepStats, error) {
	var stats SweepStats
	rec := AttemptParams{DeliveryID: d.ID, EndpointID: d.EndpointID, Now: now, DisableAfter: e.cfg.DisableAfter}
	var sentTo string // the host an attempt went to
	success := false
	record := func() (outcome, SweepStats, error) {
		got, err := e.record(ctx, rec, sentTo, !success)
		if sentTo != "" {
			pauses.add(sentTo, got.hostPausedUntil)
		}
		return got, stats, err
	}
	if now.Sub(d.CreatedAt) >= e.cfg.Retention {
		rec.Status, rec.CloseReason = DeliveryFailed, CloseHeldPastWindow
		stats.Expired++
		return record()
	}
	target := d.URL
	if ep != nil {
		if ep.Status != StatusActive {
			rec.Status = DeliveryHeld
			stats.Held++
			return record()
		}
		target = ep.URL
	}
	if err := e.cfg.Policy.Validate(target); err != nil {
		rec.Status, rec.CloseReason, rec.Error = DeliveryFailed, CloseURLRefused, err.Error()
		stats.Failed++
		return record()
	}
	host := hostOf(target)
	if until := pauses.get(host); until.After(now) {
		rec.Status, rec.NextAttemptAt = DeliveryScheduled, until
		stats.Paused++
		return record()
	}
	sentAt := e.cfg.Clock.Now()
	header, err := e.headers(ctx, sentAt, d.EventType, d.ID, d.Attempts+1, d.RequestID, d.EventID, d.Account, d.EndpointID, d.Body)
	if err != nil {
		// No key can sign: try again next sweep without counting an attempt.
		e.cfg.Logger.Error("webhooks: cannot sign delivery", "delivery", d.ID, "err", err)
		rec.Status, rec.NextAttemptAt = DeliveryScheduled, now.Add(e.cfg.SweepInterval)
		stats.Paused++
		return record()
	}
	ans := e.cfg.Sender.Post(ctx, target, header, d.Body)
	success = ans.StatusCode >= 200 && ans.StatusCode < 300
	sentTo = host
	rec.Attempted = true
	if done := e.cfg.Clock.Now(); done.After(now) {
		rec.Now = done // the attempt's time, and its retry's gap, count from its end, not the sweep's start
	}
	if ans.StatusCode != 0 {
		code := ans.StatusCode
		rec.StatusCode = &code
	} else {
		rec.Error = ans.Failure
		if ans.Err != nil {
			rec.Error = ans.Failure + ": " + truncate(ans.Err.Error(), 300)
		}
	}
	switch {
	case success:
		rec.Status, rec.Effect = DeliveryDelivered, EffectSuccess
		stats.Delivered++
	case ans.StatusCode == http.StatusGone:
		rec.Status, rec.Effect = DeliveryFailed, EffectGone
		rec.CloseReason = CloseEndpointGone
		if d.EndpointID == "" {
			rec.CloseReason = CloseRejected
		}
		stats.Failed++
	case ans.StatusCode >= 400 && ans.StatusCode < 500 && ans.StatusCode != http.StatusRequestTimeout && ans.StatusCode != http.StatusTooManyRequests:
		rec.Status, rec.CloseReason, rec.Effect = DeliveryFailed, CloseRejected, EffectFailure
		stats.Failed++
	default: // 3xx, 408, 429, 5xx, timeout, TLS, DNS, refused address
		rec.Effect = EffectFailure
		if gap, ok := RetryGap(d.Attempts+1, e.cfg.Jitter()); ok {
			rec.Status, rec.NextAttemptAt = DeliveryScheduled, rec.Now.Add(gap)
			stats.Retried++
		} else {
			rec.Status, rec.CloseReason = DeliveryFailed, CloseAttemptsExhausted
			stats.Failed++
		}
	}
	if d.EndpointID == "" {
		rec.Effect = EffectNone
	}
	e.cfg.Metrics.WebhookDelivery(outcomeOf(rec), d.Attempts+1)
	return record()
}

// headers signs one POST: Svc-Signature (v2 or v1), the queue-protocol headers, and the
// unsigned Svc-Delivery and Svc-Attempt.
func (e *Engine) headers(ctx context.Context, at time.Time, eventType, deliveryID string, attempt int, requestID, eventID, account, endpointID string, body []byte) (http.Header, error) {
	key, err := e.cfg.Keys.Current(ctx, at)
	if err != nil {
		return nil, err
	}
	if requestID == "" {
		requestID = eventID
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set(HeaderEvent, eventType)
	h.Set(HeaderDelivery, deliveryID)
	h.Set(HeaderAttempt, strconv.Itoa(attempt))
	if e.cfg.Scheme == SchemeHMAC && endpointID != "" {
		h.Set(HeaderSignature, SignV1(EndpointSecret(e.cfg.Secret, endpointID), at, body))
	} else {
		h.Set(HeaderSignature, SignV2(key, at, body))
	}
	h.Set(HeaderAltRequestID, requestID)
	h.Set(HeaderAltUserID, account)
	h.Set(HeaderAltTimestamp, ts)
	h.Set(HeaderAltSignature, SignAlt(key, requestID, account, ts, body))
	return h, nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DeliveryID is the stable Svc-Delivery of an event for a destination: the same inputs always
// give the same id, so a job settled twice enqueues once.
func DeliveryID(endpointID, eventID string) string {
	sum := sha256.Sum256([]byte(endpointID + "\x00" + eventID))
	return "dlv_" + strings.ToLower(idEncoding.EncodeToString(sum[:]))[:26]
}

func randomID(r io.Reader, prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return prefix + strings.ToLower(idEncoding.EncodeToString(b)), nil
}

// release gives claimed deliveries back unattempted, due at now: no attempt is counted.
func (e *Engine) release(ctx context.Context, now time.Time, ds []Delivery) error {
	for _, d := range ds {
		if _, err := e.record(ctx, AttemptParams{DeliveryID: d.ID, EndpointID: d.EndpointID, Now: now,
			Status: DeliveryScheduled, NextAttemptAt: now, DisableAfter: e.cfg.DisableAfter}, "", false); err != nil {
			return err
		}
	}
	return nil
}
