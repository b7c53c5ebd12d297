package webhooks

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// Service is what the account API's webhook routes and the jobs outbox call: registration,
// re-challenge, delete, list, the record shape, the per-request URL check, and Notify.
type Service struct {
	cfg    Config
	engine *Engine
}

// NewService builds the service; its Engine (Service.Engine) is the delivery worker to Run.
func NewService(cfg Config) (*Service, error) {
	eng, err := NewEngine(cfg)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: eng.cfg, engine: eng}, nil
}

// Engine returns the delivery engine sharing this service's configuration.
func (s *Service) Engine() *Engine { return s.engine }

// MaxEndpoints is the `limit` of too_many_webhooks.
func (s *Service) MaxEndpoints() int { return s.cfg.MaxEndpoints }

// CheckCallbackURL checks a per-request `webhook` URL when a submit stores it (400/422
// invalid_url with the *URLError's Reason). It is checked again before sending.
func (s *Service) CheckCallbackURL(raw string) error { return s.cfg.Policy.Validate(raw) }

// RegisterParams is the body of POST /v1/webhooks.
type RegisterParams struct {
	Account  string
	URL      string
	Products []string
}

// Registration is the answer of Register and Rechallenge.
type Registration struct {
	Endpoint Endpoint
	Passed   bool   // the challenge just run passed
	Secret   string // whsec_ secret under SchemeHMAC; "" otherwise
}

// Register validates and stores a new endpoint, then challenges it once. Errors: *URLError
// (400 invalid_url with reason), *ProductsError (400 invalid_products with allowed),
// ErrTooManyWebhooks (409 too_many_webhooks with limit MaxEndpoints); others are 500
// webhook_not_created. A failed challenge is not an error: the endpoint stays pending with
// its verification (201 either way).
func (s *Service) Register(ctx context.Context, p RegisterParams) (Registration, error) {
	if err := s.cfg.Policy.Validate(p.URL); err != nil {
		return Registration{}, err
	}
	products, err := NormalizeProducts(p.Products)
	if err != nil {
		return Registration{}, err
	}
	id, err := randomID(s.cfg.Rand, "wh_", 15)
	if err != nil {
		return Registration{}, err
	}
	now := s.cfg.Clock.Now()
	ep, err := s.cfg.Store.CreateEndpoint(ctx, CreateEndpointParams{ID: id, Account: p.Account, URL: p.URL,
		Products: products, Now: now, MaxNotDead: s.cfg.MaxEndpoints})
	if err != nil {
		return Registration{}, err
	}
	return s.challengeAndRecord(ctx, ep)
}

// Rechallenge re-runs the challenge on the stored URL (POST /v1/webhooks/{id}). Errors:
// ErrNotFound (404), *URLError when the stored URL no longer passes (409 invalid_url with
// reason). A failed challenge leaves the status as it was and updates verification; a pass
// makes the endpoint active and releases its held events oldest first (the first at once,
// then 20 a minute; none older than the retention window).
func (s *Service) Rechallenge(ctx context.Context, account, id string) (Registration, error) {
	ep, err := s.cfg.Store.GetEndpoint(ctx, id)
	if err != nil {
		return Registration{}, err
	}
	if ep.Account != account {
		return Registration{}, ErrNotFound
	}
	if err := s.cfg.Policy.Validate(ep.URL); err != nil {
		return Registration{}, err
	}
	return s.challengeAndRecord(ctx, ep)
}

func (s *Service) challengeAndRecord(ctx context.Context, ep Endpoint) (Registration, error) {
	passed, v, err := s.challenge(ctx, ep)
	if err != nil {
		return Registration{}, err
	}
	now := s.cfg.Clock.Now()
	rec, err := s.cfg.Store.RecordChallenge(ctx, RecordChallengeParams{EndpointID: ep.ID, Now: now, Passed: passed,
		Verification: v, RetainFrom: now.Add(-s.cfg.Retention), ReleaseSpacing: s.cfg.ReleaseSpacing, MaxNotDead: s.cfg.MaxEndpoints})
	if err != nil {
		return Registration{}, err
	}
	if rec.Released > 0 {
		// The first released event goes at once; the sweep sends the rest at the paced times.
		if _, err := s.engine.sendDue(ctx, now, ep.ID, 1); err != nil {
			s.cfg.Logger.Error("webhooks: first released delivery", "endpoint", ep.ID, "err", err)
		}
		if got, err := s.cfg.Store.GetEndpoint(ctx, ep.ID); err == nil {
			rec.Endpoint = got
		}
	}
	reg := Registration{Endpoint: rec.Endpoint, Passed: passed}
	if s.cfg.Scheme == SchemeHMAC {
		reg.Secret = EndpointSecret(s.cfg.Secret, ep.ID)
	}
	return reg, nil
}

// Challenge reasons besides the sender's failure kinds.
const (
	ChallengeNonceNotEchoed = "nonce_not_echoed"
	ChallengeNoSigningKey   = "no_signing_key"
)

// challenge POSTs one signed webhook.challenge envelope and judges the answer: a 2xx whose
// body holds the nonce anywhere passes. The nonce is never returned: it is blanked out of the
// body preview kept in verification.
func (s *Service) challenge(ctx context.Context, ep Endpoint) (bool, *Verification, error) {
	nb := make([]byte, 16)
	if _, err := io.ReadFull(s.cfg.Rand, nb); err != nil {
		return false, nil, err
	}
	nonce := hex.EncodeToString(nb)
	evtID, err := randomID(s.cfg.Rand, "evt_challenge_", 10)
	if err != nil {
		return false, nil, err
	}
	now := s.cfg.Clock.Now()
	body, err := json.Marshal(ChallengeEnvelope{ID: evtID, Type: EventChallenge, Created: now.Unix(), Account: ep.Account,
		WebhookID: ep.ID, Data: ChallengeData{WebhookID: ep.ID, Nonce: nonce, How: ChallengeHow}})
	if err != nil {
		return false, nil, err
	}
	header, err := s.engine.headers(ctx, now, EventChallenge, evtID, 1, evtID, evtID, ep.Account, ep.ID, body)
	if errors.Is(err, ErrNoSigningKey) {
		// No sweep has run yet in this deployment: make the first key now.
		if err := s.cfg.Keys.Maintain(ctx, now); err != nil {
			return false, nil, err
		}
		header, err = s.engine.headers(ctx, now, EventChallenge, evtID, 1, evtID, evtID, ep.Account, ep.ID, body)
	}
	if err != nil {
		if errors.Is(err, ErrNoSigningKey) {
			return false, &Verification{Reason: ChallengeNoSigningKey, CheckedAt: now}, nil
		}
		return false, nil, err
	}
	ans := s.cfg.Sender.PostChallenge(ctx, ep.URL, header, body)
	passed, v := JudgeChallenge(ans, nonce)
	if v != nil {
		v.CheckedAt = now
	}
	return passed, v, nil
}

// JudgeChallenge decides a challenge answer: pass on a 2xx whose body contains the nonce (as
// a JSON nonce or challenge field, inside data, as plain text or in HTML: anywhere). On
// failure the verification names the reason (nonce_not_echoed, status_<code>, or the
// sender's failure kind) and the first 200 characters of the answer with the nonce blanked.
func JudgeChallenge(ans Answer, nonce string) (bool, *Verification) {
	if ans.StatusCode >= 200 && ans.StatusCode < 300 && bytes.Contains(ans.Body, []byte(nonce)) {
		return true, nil
	}
	v := &Verification{Body: truncate(blankNonce(string(bytes.ToValidUTF8(ans.Body, nil)), nonce), 200)}
	switch {
	case ans.StatusCode == 0:
		v.Reason = ans.Failure
	case ans.StatusCode >= 200 && ans.StatusCode < 300:
		v.Reason = ChallengeNonceNotEchoed
	default:
		v.Reason = "status_" + strconv.Itoa(ans.StatusCode)
	}
	if ans.StatusCode != 0 {
		code := ans.StatusCode
		v.StatusCode = &code
	}
	return false, v
}

// blankNonce replaces every occurrence of the nonce in s, in any letter case (a receiver that
// echoes it upper-cased fails the challenge, but its answer must still not tell the caller
// the nonce), with "[nonce]".
func blankNonce(s, nonce string) string {
	if nonce == "" {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if i+len(nonce) <= len(s) && equalFoldASCII(s[i:i+len(nonce)], nonce) {
			b.WriteString("[nonce]")
			i += len(nonce)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// equalFoldASCII compares a and b (of equal length) folding only ASCII letters, so a match
// never spans part of a multi-byte character.
func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Delete removes the account's endpoint and its queued deliveries (DELETE /v1/webhooks/{id});
// existed is false when it was already gone. Errors are 500 webhook_delete_failed.
func (s *Service) Delete(ctx context.Context, account, id string) (existed bool, err error) {
	return s.cfg.Store.DeleteEndpoint(ctx, account, id)
}

// List returns the account's endpoints, oldest first (GET /v1/webhooks). Errors are 500
// webhook_read_failed.
func (s *Service) List(ctx context.Context, account string) ([]Endpoint, error) {
	return s.cfg.Store.ListEndpoints(ctx, account)
}

// Notify turns a settled job into deliveries: one per registered endpoint of the account
// whose products match (active: scheduled now; disabled: held; pending and dead: none), plus
// one to the per-request URL when the submit named one. Chat turns deliver nothing. Delivery
// ids are deterministic, so notifying the same job outcome twice enqueues once. Returns the
// ids of the deliveries inserted and wakes the engine.
func (s *Service) Notify(ctx context.Context, ev JobEvent) ([]string, error) {
	news, err := s.deliveriesOf(ctx, ev, s.cfg.Store.ListEndpoints)
	if err != nil {
		return nil, err
	}
	return s.enqueue(ctx, news)
}

// NotifyAll is Notify for each event in order, in one transaction, reading each account's
// endpoints once for the lot (the relay hands a batch of settled jobs at once). It answers how
// many events were notified before the first error.
func (s *Service) NotifyAll(ctx context.Context, evs []JobEvent) (int, error) {
	seen := map[string][]Endpoint{}
	list := func(ctx context.Context, account string) ([]Endpoint, error) {
		if eps, ok := seen[account]; ok {
			return eps, nil
		}
		eps, err := s.cfg.Store.ListEndpoints(ctx, account)
		if err == nil {
			seen[account] = eps
		}
		return eps, err
	}
	var news []NewDelivery
	for i, ev := range evs {
		got, err := s.deliveriesOf(ctx, ev, list)
		if err != nil {
			// The events before this one are still notified; it and the rest are not.
			if _, err := s.enqueue(ctx, news); err != nil {
				return 0, err
			}
			return i, err
		}
		news = append(news, got...)
	}
	if _, err := s.enqueue(ctx, news); err != nil {
		return 0, err
	}
	return len(evs), nil
}

// enqueue inserts news and wakes the engine when any was new.
func (s *Service) enqueue(ctx context.Context, news []NewDelivery) ([]string, error) {
	if len(news) == 0 {
		return nil, nil
	}
	ids, err := s.cfg.Store.EnqueueDeliveries(ctx, EnqueueParams{Now: s.cfg.Clock.Now(), Deliveries: news})
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		s.engine.Wake()
	}
	return ids, nil
}

// deliveriesOf is the deliveries an event makes: one per active or disabled endpoint of its
// account taking its product, and its per-request callback. A chat turn makes none.
func (s *Service) deliveriesOf(ctx context.Context, ev JobEvent, list func(context.Context, string) ([]Endpoint, error)) ([]NewDelivery, error) {
	if ev.Chat || ev.Product == ProductChat {
		return nil, nil
	}
	typ, err := ev.EventType()
	if err != nil {
		return nil, err
	}
	eps, err := list(ctx, ev.Account)
	if err != nil {
		return nil, err
	}
	var news []NewDelivery
	for _, ep := range eps {
		if ep.Status != StatusActive && ep.Status != StatusDisabled {
			continue
		}
		if !matchesProducts(ep.Products, ev.Product) {
			continue
		}
		body, err := ev.EnvelopeFor(ep.ID)
		if err != nil {
			return nil, err
		}
		news = append(news, NewDelivery{ID: DeliveryID(ep.ID, ev.EventID()), EndpointID: ep.ID, Account: ev.Account,
			EventID: ev.EventID(), EventType: typ, JobID: ev.JobID, RequestID: ev.RequestID, Body: body})
	}
	if ev.CallbackURL != "" {
		body, err := ev.RequestBodyJSON()
		if err != nil {
			return nil, err
		}
		// Job ids are unique per account only (idempotency keys are account-scoped).
		news = append(news, NewDelivery{ID: DeliveryID("request:"+ev.Account, ev.EventID()), Account: ev.Account, EventID: ev.EventID(),
			EventType: typ, JobID: ev.JobID, RequestID: ev.RequestID, URL: ev.CallbackURL, Body: body})
	}
	return news, nil
}

// Record is the webhook endpoint record of spec 01 as the API answers it.
type Record struct {
	ID                  string              `json:"id"`
	Object              string              `json:"object"`
	URL                 string              `json:"url"`
	Products            []string            `json:"products"`
	Status              EndpointStatus      `json:"status"`
	CreatedAt           string              `json:"created_at"`
	Verified            bool                `json:"verified"`
	VerifiedAt          *string             `json:"verified_at"`
	VerifyKeys          string              `json:"verify_keys"`
	SignatureAlgorithm  string              `json:"signature_algorithm"`
	ConsecutiveFailures int                 `json:"consecutive_failures"`
	LastSuccessAt       *string             `json:"last_success_at"`
	LastFailureAt       *string             `json:"last_failure_at"`
	LastStatusCode      *int                `json:"last_status_code"`
	DisabledReason      *string             `json:"disabled_reason"`
	Verification        *RecordVerification `json:"verification,omitempty"`
	Secret              string              `json:"secret,omitempty"` // whsec_ under SchemeHMAC, on create and re-challenge only
}

// RecordVerification is the record's verification object.
type RecordVerification struct {
	Reason     string `json:"reason"`
	StatusCode *int   `json:"status_code"`
	Body       string `json:"body"`
}

// JWKSPath is the route of the public key set.
const JWKSPath = "/.well-known/jwks.json"

// Record renders an endpoint as the API answers it. Times are RFC 3339 UTC.
func (s *Service) Record(ep Endpoint) Record {
	r := Record{ID: ep.ID, Object: "webhook", URL: ep.URL, Products: ep.Products, Status: ep.Status,
		CreatedAt: rfc3339(ep.CreatedAt), Verified: ep.Verified, VerifiedAt: rfc3339p(ep.VerifiedAt),
		VerifyKeys: strings.TrimSuffix(s.cfg.PublicBaseURL, "/") + JWKSPath, SignatureAlgorithm: "EdDSA",
		ConsecutiveFailures: ep.ConsecutiveFailures, LastSuccessAt: rfc3339p(ep.LastSuccessAt),
		LastFailureAt: rfc3339p(ep.LastFailureAt), LastStatusCode: ep.LastStatusCode}
	if s.cfg.Scheme == SchemeHMAC {
		r.SignatureAlgorithm = "HMAC-SHA256"
	}
	if ep.DisabledReason != "" {
		reason := ep.DisabledReason
		r.DisabledReason = &reason
	}
	if v := ep.Verification; v != nil {
		r.Verification = &RecordVerification{Reason: v.Reason, StatusCode: v.StatusCode, Body: v.Body}
	}
	return r
}

// RegistrationRecord renders a Register or Rechallenge answer, with the whsec_ secret when
// the deployment signs with SchemeHMAC.
func (s *Service) RegistrationRecord(reg Registration) Record {
	r := s.Record(reg.Endpoint)
	r.Secret = reg.Secret
	return r
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func rfc3339p(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := rfc3339(*t)
	return &s
}
