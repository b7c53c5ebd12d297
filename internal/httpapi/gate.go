package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Pacer is the rate-limit seam of the check order: the per-instance fuse (step 5, before the
// key is looked up) and the shared limiter (step 6). Fuse answers whether the request passes
// and the fuse's own figures for a refusal's rate headers. An Admit error means the limiter
// could not be reached (503 limiter_unavailable). NoCapacity reports a plan's bucket that
// holds nothing, which no fuse turns into a 429.
type Pacer interface {
	Fuse(key string, b ratelimit.Bucket, now time.Time) (ratelimit.Decision, bool)
	Admit(ctx context.Context, req ratelimit.Request) (ratelimit.Decision, error)
	NoCapacity(plan string, b ratelimit.Bucket) bool
}

// Switches are the operator's kill switches (order of checks step 1).
type Switches struct {
	APIDisabled      atomic.Bool
	DisabledProducts atomic.Pointer[map[string]bool]
}

// ProductDisabled reports whether product is paused.
func (s *Switches) ProductDisabled(product string) bool {
	m := s.DisabledProducts.Load()
	return m != nil && (*m)[product]
}

// Route describes what a route asks of the check order.
type Route struct {
	Bucket ratelimit.Bucket
	// Public routes take no key (catalogue, openapi, jwks): checks 3-7 do not apply.
	Public bool
	// Product, when set, names the product the request is for (api_disabled per product).
	Product func(r *http.Request) string
	// Scope, when set, is the requirement checked last (step 7). It may return a catalogued
	// error (e.g. not_found for an unknown model address).
	Scope func(r *http.Request) (auth.Requirement, error)
	// Spends says every request of the route is charged through the ledger, whose transaction
	// confirms the caller's standing: the principal may come from the gate's cache, as on the
	// generate bucket.
	Spends bool
}

// Gate runs the order of checks of spec 02 in front of every route.
type Gate struct {
	Auth     *auth.Service
	Pacer    Pacer
	Switches *Switches
	Now      func() time.Time
	Log      *slog.Logger
	Metrics  RateRecorder   // nil: refusals are not counted
	LastUsed *auth.LastUsed // nil: keys' last use is not noted
	// Proxies are the load balancers whose X-Forwarded-For names the client of a keyless
	// answer's per-address bucket (nil: the connection's peer is the client).
	Proxies Proxies
}

// Principal returns the authenticated caller of r (nil on public routes).
func Principal(r *http.Request) *auth.Principal {
	p, _ := r.Context().Value(principalKey).(*auth.Principal)
	return p
}

// Protect wraps h in the order of checks for route.
func (g *Gate) Protect(route Route, h http.Handler) http.Handler {
	return Func(func(w http.ResponseWriter, r *http.Request) error {
		p, err := g.check(w, r, route)
		if err != nil {
			return err
		}
		if p != nil {
			ctx := context.WithValue(r.Context(), principalKey, p)
			if p.Unconfirmed {
				// An error the handler answers for a principal from the cache confirms it
				// first (WriteError): a revoked key or a banned account is answered as such.
				// A submit that succeeds confirmed it in its charge's transaction, and the host
				// that submitted marks it so (modelhost's confirmed): what is answered after it,
				// such as a run whose links are refused and whose charge stands, is answered as
				// it is.
				ctx = context.WithValue(ctx, confirmKey, confirmer(func(w http.ResponseWriter, r *http.Request, err error) error {
					return g.refuse(w, r, p, route.Bucket, err)
				}))
			}
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
		return nil
	})
}

// Check runs the order of checks for route and answers the caller (nil on public routes).
// A surface that renders its own error envelope (the compatibility surface) calls it
// instead of Protect. On a route that Spends the principal may be unconfirmed: the surface
// passes any error it answers before a charge confirmed the caller through Confirm first.
// On any other route an unconfirmed principal is confirmed here.
func (g *Gate) Check(w http.ResponseWriter, r *http.Request, route Route) (*auth.Principal, error) {
	p, err := g.check(w, r, route)
	if err == nil && p != nil && p.Unconfirmed && !route.Spends {
		if err := g.refuse(w, r, p, route.Bucket, nil); err != nil {
			return nil, err
		}
		p.Unconfirmed = false
	}
	return p, err
}

// Confirm answers err for an unconfirmed principal of Check, unless its standing, read afresh,
// refuses first (spec 02 order of checks); err as it is for a confirmed one.
func (g *Gate) Confirm(w http.ResponseWriter, r *http.Request, p *auth.Principal, route Route, err error) error {
	if p == nil {
		return err
	}
	return g.refuse(w, r, p, route.Bucket, err)
}

func (g *Gate) check(w http.ResponseWriter, r *http.Request, route Route) (*auth.Principal, error) {
	now := g.Now()
	// 1. API or product paused.
	if g.Switches != nil {
		if g.Switches.APIDisabled.Load() || (route.Product != nil && g.Switches.ProductDisabled(route.Product(r))) {
			g.anonymousHeaders(w, r, now)
			return nil, apierr.New(apierr.APIDisabled)
		}
	}
	// 2. Browser calls are refused before the key is read; then the declared body size.
	if _, ok := r.Header["Origin"]; ok {
		g.anonymousHeaders(w, r, now)
		return nil, apierr.New(apierr.BrowserOriginRefused)
	}
	if r.ContentLength > MaxBody {
		g.anonymousHeaders(w, r, now)
		return nil, bodyTooLarge()
	}
	if route.Public {
		g.anonymousHeaders(w, r, now)
		return nil, nil
	}
	// 3. Authorization present.
	raw, ok := credential(r)
	if !ok {
		g.anonymousHeaders(w, r, now)
		return nil, apierr.New(apierr.MissingAuthorization)
	}
	// 4. Key well formed (keys_not_configured when the deployment has no secret).
	pk, err := g.Auth.Parse(raw)
	if err != nil {
		g.anonymousHeaders(w, r, now)
		return nil, err
	}
	noteKeyID(r, pk.ID) // the public id, never the key, goes to the access log (KEY-13)
	bucket := route.Bucket
	// 5. Per-instance fuse, before the key is looked up: counted on the whole key as presented
	// (its digest), not its public id, so requests with a forged secret spend a counter of their
	// own, never the real key's.
	if g.Pacer != nil && !g.fuse(w, fuseKey(raw), bucket, now) {
		// A bucket the plan does not have is refused as such, never 429 (spec 02, rate-limit
		// buckets #3), when the key is known from the last second.
		if p, ok := g.Auth.Cached(pk); ok && g.Pacer.NoCapacity(string(p.Account.Plan), bucket) {
			return nil, g.Admit(w, r, &p, bucket, 1)
		}
		g.limited(bucket)
		e := apierr.New(apierr.RateLimited, "bucket", string(bucket), "retry_after", 1, "reason", "instance_fuse").WithRetryAfter(1)
		e.Message = fmt.Sprintf("Too many requests on the %s bucket from this key in one second on this server; retry after 1 s.", bucket)
		return nil, e
	}
	// 6. Account status, key validity, plan and rate bucket. A spending request may be let
	// through on a cached principal (Unconfirmed): its charge confirms it in its transaction,
	// and any refusal answered before that is confirmed first (refuse below, WriteError), so
	// a revoked key or a banned account is answered as such at once and in the spec's order.
	// Writes that spend nothing and downloads read the key and the account afresh.
	var p auth.Principal
	if bucket == ratelimit.Generate || route.Spends {
		p, err = g.Auth.AuthenticateSpend(r.Context(), pk)
	} else {
		p, err = g.Auth.Authenticate(r.Context(), pk, bucket == ratelimit.Read)
	}
	if err != nil {
		if e, ok := apierr.As(err); ok && e.Code != apierr.InvalidAPIKey {
			noteKeyVerified(r) // the secret held; the key or its account stands refused
		}
		g.anonymousHeaders(w, r, now)
		return nil, authFailure(err, bucket)
	}
	noteKeyVerified(r)
	if g.LastUsed != nil {
		g.LastUsed.Note(p.Key.ID, now) // the key list's "last used"
	}
	if p.Account.Status == auth.Limited && bucket != ratelimit.Read {
		g.anonymousHeaders(w, r, now)
		return nil, apierr.New(apierr.AccountLimited, "bucket", string(bucket))
	}
	if g.Pacer != nil {
		if err := g.Admit(w, r, &p, bucket, 1); err != nil {
			return nil, g.refuse(w, r, &p, bucket, err)
		}
	}
	// 7. Scope, last.
	if route.Scope != nil {
		req, err := route.Scope(r)
		if err != nil {
			return nil, g.refuse(w, r, &p, bucket, err)
		}
		if !req.Satisfied(p.Key.Scopes) {
			return nil, g.refuse(w, r, &p, bucket, req.Refuse(p.Key.Scopes))
		}
	}
	return &p, nil
}

// fuseKey is the fuse's counter for a presented key: a digest of the whole of it, so the
// process holds no key's secret in its counters.
func fuseKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:12])
}

// fuse is check step 5 for key and bucket. A refusal's rate headers are the fuse's own
// figures (its limit per second, nothing left, reset at the next second), and take nothing
// from the per-address bucket of keyless answers: the key is known, if not yet looked up.
func (g *Gate) fuse(w http.ResponseWriter, key string, b ratelimit.Bucket, now time.Time) bool {
	d, admitted := g.Pacer.Fuse(key, b, now)
	if !admitted {
		setRateHeaders(w.Header(), d, now)
	}
	return admitted
}

// refuse answers err for a principal that passed check 6, unless the principal is unconfirmed
// and its standing, read afresh, refuses first.
func (g *Gate) refuse(w http.ResponseWriter, r *http.Request, p *auth.Principal, bucket ratelimit.Bucket, err error) error {
	if !p.Unconfirmed {
		return err
	}
	if e := g.confirm(w, r, p, bucket); e != nil {
		if _, refused := apierr.As(e); refused || err == nil {
			return e
		}
		// The standing could not be read (the request's context ended while it ran: a body cut
		// short): the refusal being answered stands, and is answered. Only a check that lets
		// the caller through (err nil) fails with the read.
	}
	return err
}

// confirm reads an unconfirmed principal's key and account afresh and answers the refusal of
// check 6 their standing calls for, with the headers of a refusal at that step; nil when they
// stand.
func (g *Gate) confirm(w http.ResponseWriter, r *http.Request, p *auth.Principal, bucket ratelimit.Bucket) error {
	err := g.Auth.Confirm(r.Context(), *p)
	if err == nil {
		return nil
	}
	if e, ok := apierr.As(err); ok {
		g.anonymousHeaders(w, r, g.Now())
		if e.Code == apierr.AccountLimited {
			e.With("bucket", string(bucket))
		}
	}
	return err
}

// confirmer confirms an unconfirmed principal before err is answered (WriteError) and answers
// what is to be answered: the standing's refusal, or err.
type confirmer func(w http.ResponseWriter, r *http.Request, err error) error

// Admit takes cost from the caller's bucket and sets the rate headers from the answer. The
// asset-list route calls it a second time for egress; the headers show the last admission.
func (g *Gate) Admit(w http.ResponseWriter, r *http.Request, p *auth.Principal, bucket ratelimit.Bucket, cost int64) error {
	if g.Pacer == nil {
		return nil
	}
	now := g.Now()
	d, err := g.Pacer.Admit(r.Context(), requestOf(p, bucket, cost))
	setRateHeaders(w.Header(), d, now)
	if err != nil {
		g.Log.Warn("rate limiter unavailable", "err", err, "key_id", p.Key.ID)
		return apierr.New(apierr.LimiterUnavailable).WithRetryAfter(5)
	}
	switch d.Refusal {
	case "":
		return nil
	case ratelimit.PlanHasNoAPIGenerate:
		e := apierr.New(apierr.PlanHasNoAPIGenerate, "plan", string(p.Account.Plan), "bucket", string(bucket))
		e.Message = fmt.Sprintf("The %s plan has no capacity on the %s bucket: move to a plan that includes it.", p.Account.Plan, bucket)
		return e
	case ratelimit.RequestTooLarge:
		e := apierr.New(apierr.RequestTooLarge, "plan", string(p.Account.Plan), "bucket", string(bucket), "limit", d.Limit)
		e.Message = fmt.Sprintf("This request costs %d on the %s bucket, more than the %s plan's bucket can ever hold (%d).", cost, bucket, p.Account.Plan, d.Limit)
		if until, ok := newAccountUntil(p, now); ok {
			e.Message = fmt.Sprintf("This request costs more than the %s bucket can hold while the account is new: for its first 24 hours every limit is a fifth of the %s plan's, until %s.",
				bucket, p.Account.Plan, until.Format(time.RFC3339))
		}
		return e
	default:
		// Whole seconds, at least 1: a refusal always names a wait (ERR-05, ERR-38).
		secs := max(1, ceilSeconds(d.RetryAfter))
		g.limited(bucket)
		e := apierr.New(apierr.RateLimited, "bucket", string(bucket), "retry_after", secs, "reason", "bucket_spent").WithRetryAfter(secs)
		e.Message = fmt.Sprintf("Rate limit reached on the %s bucket of the %s plan (%d at most); retry after %d s.", bucket, p.Account.Plan, d.Limit, secs)
		if until, ok := newAccountUntil(p, now); ok {
			// Nothing else tells a new account why its second submit is refused (RL-13).
			e.Message = fmt.Sprintf("Rate limit reached on the %s bucket; retry after %d s. This account is new: for its first 24 hours every limit is a fifth of the %s plan's (new account limits until %s).",
				bucket, secs, p.Account.Plan, until.Format(time.RFC3339))
		}
		return e
	}
}

// requestOf is the limiter's request for cost of p's key's bucket.
func requestOf(p *auth.Principal, bucket ratelimit.Bucket, cost int64) ratelimit.Request {
	return ratelimit.Request{Key: p.Key.ID, Plan: string(p.Account.Plan), AccountCreated: p.Account.CreatedAt, Bucket: bucket, Cost: cost}
}

// newAccountUntil reports whether p's account is inside its first 24 hours (spec 02 rate-limit
// rule 4, limits ×0.2) and when that ends.
func newAccountUntil(p *auth.Principal, now time.Time) (time.Time, bool) {
	created := p.Account.CreatedAt
	if !ratelimit.NewAccount(created, now) {
		return time.Time{}, false
	}
	return created.Add(ratelimit.NewAccountWindow).UTC(), true
}

// Keyless serves h with the rate headers of a keyless answer (the per-client-address read
// bucket, DESIGN.md decision 23) and none of the key checks: liveness and readiness probes and
// the error pages carry the six headers every response carries (RL-15). A browser call is
// refused there as on every route (spec 02, key format and transport #4).
func (g *Gate) Keyless(h http.Handler) http.Handler {
	signed := g.Signed(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Origin"]; ok {
			if g != nil {
				g.anonymousHeaders(w, r, g.Now())
			}
			WriteError(w, r, apierr.New(apierr.BrowserOriginRefused))
			return
		}
		signed.ServeHTTP(w, r)
	})
}

// Signed serves a signed /files/ link with the keyless answers' rate headers. The signature is
// the credential, and a link is made to be opened from a page: an <audio> or <img> of another
// origin, the console's own upload (a PUT, which browsers send with Origin). So Origin is not
// refused here; no Access-Control-* header is sent, so no other origin's script reads the bytes.
func (g *Gate) Signed(h http.Handler) http.Handler {
	if g == nil || g.Pacer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.anonymousHeaders(w, r, g.Now())
		h.ServeHTTP(w, r)
	})
}

// AnonymousHeaders sets the rate-limit headers of a response that no key answers for (an
// unknown path), from the caller's address's own bucket.
func (g *Gate) AnonymousHeaders(w http.ResponseWriter, r *http.Request) {
	g.anonymousHeaders(w, r, g.Now())
}

// anonymousHeaders sets the rate headers of answers given before a key is known, from a
// per-client-address read bucket (DESIGN.md decision 23).
func (g *Gate) anonymousHeaders(w http.ResponseWriter, r *http.Request, now time.Time) {
	if g.Pacer == nil {
		return
	}
	// Every response carries the headers (spec 01 "Endpoints"): while the limiter cannot be
	// reached they say what the pacer answered in its place, as a keyed answer's do.
	d, _ := g.Pacer.Admit(r.Context(), ratelimit.Request{Key: "addr:" + g.Proxies.ClientAddr(r), Plan: string(auth.Free), Bucket: ratelimit.Read, Cost: 1})
	setRateHeaders(w.Header(), d, now)
}

func setRateHeaders(h http.Header, d ratelimit.Decision, now time.Time) {
	reset := ceilSeconds(d.ResetAfter)
	limit, remaining := strconv.FormatInt(d.Limit, 10), strconv.FormatInt(d.Remaining, 10)
	h.Set("RateLimit-Limit", limit)
	h.Set("RateLimit-Remaining", remaining)
	h.Set("RateLimit-Reset", strconv.Itoa(reset))
	h.Set("X-RateLimit-Limit", limit)
	h.Set("X-RateLimit-Remaining", remaining)
	h.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(time.Duration(reset)*time.Second).Unix(), 10))
}

// authFailure is the answer to a key and account that did not authenticate for bucket: a
// refusal as it is (account_limited naming the bucket), and a read that could not be made
// (the database unreachable) 503 service_busy: the check could not run and nothing was
// charged, so the caller resends shortly (ERR-55), rather than reading an unknown charge from
// a 500. WriteError logs the cause.
func authFailure(err error, bucket ratelimit.Bucket) error {
	e, ok := apierr.As(err)
	if !ok {
		return apierr.Newf(apierr.ServiceBusy, "The key could not be checked just now; nothing was charged. Send the request again shortly.").
			WithRetryAfter(1).WithStatus(503).Wrap(err)
	}
	if e.Code == apierr.AccountLimited {
		e.With("bucket", string(bucket))
	}
	return err
}

// AdmitEgress admits a request about to sign download links to bytes of a job's files for its
// caller: the key and the account are read afresh past the read cache (a revocation answers at
// once, KEY-25; a limited account may read but not download: account_limited with bucket
// egress), then the egress bucket takes the bytes in whole megabytes, minimum 1 (RL-09). The
// asset list and the queue host's result read both sign through it.
func (g *Gate) AdmitEgress(w http.ResponseWriter, r *http.Request, p *auth.Principal, bytes int64) error {
	return g.admitEgress(w, r, p, ratelimit.EgressCost(bytes), false)
}

// PrepaidEgress is what a synchronous run takes of the egress bucket before it runs
// (AdmitEgress of one megabyte): a spent bucket refuses the run before it is charged, as a
// resend is safe then.
const PrepaidEgress = 1

// AdmitPaidEgress admits the links to a synchronous run's output, which ran and was charged
// before they are signed, with PrepaidEgress taken before it ran: the rest of the files'
// megabytes are taken whatever the bucket holds (ratelimit.Request.Overdraw, a debt that
// refuses the key's next download or run until it is repaid), and a limiter that cannot be
// asked lets them out. A refusal now would answer a paid run with a status clients resend as
// a new run, paying again. The key and the account are read afresh as AdmitEgress does: a
// revoked key or a limited account is still refused.
func (g *Gate) AdmitPaidEgress(w http.ResponseWriter, r *http.Request, p *auth.Principal, bytes int64) error {
	return g.admitEgress(w, r, p, ratelimit.EgressCost(bytes)-PrepaidEgress, true)
}

func (g *Gate) admitEgress(w http.ResponseWriter, r *http.Request, p *auth.Principal, cost int64, paid bool) error {
	if g.Auth != nil {
		if raw, ok := credential(r); ok {
			pk, err := g.Auth.Parse(raw)
			if err != nil {
				return err
			}
			fresh, err := g.Auth.Authenticate(r.Context(), pk, false)
			if err != nil {
				return authFailure(err, ratelimit.Egress)
			}
			p = &fresh
		}
	}
	if p.Account.Status == auth.Limited {
		return apierr.New(apierr.AccountLimited, "bucket", string(ratelimit.Egress))
	}
	if !paid {
		return g.Admit(w, r, p, ratelimit.Egress, cost)
	}
	if g.Pacer == nil || cost <= 0 {
		return nil
	}
	req := requestOf(p, ratelimit.Egress, cost)
	req.Overdraw = true
	d, err := g.Pacer.Admit(r.Context(), req)
	if err != nil {
		g.Log.Warn("rate limiter unavailable: a paid run's output goes out uncounted", "err", err, "key_id", p.Key.ID)
		return nil
	}
	setRateHeaders(w.Header(), d, g.Now())
	return nil
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// credential extracts the key: "Bearer <key>", "Key <key>" (fal clients) or the bare key.
func credential(r *http.Request) (string, bool) {
	v, ok := r.Header["Authorization"]
	if !ok || len(v) == 0 {
		return "", false
	}
	s := strings.TrimSpace(v[0])
	if i := strings.IndexByte(s, ' '); i > 0 {
		scheme := s[:i]
		if strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Key") {
			s = strings.TrimSpace(s[i+1:])
		}
	}
	return s, true
}
