package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/studio"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Handler serves the console. Every dependency is a field set by the server's constructor;
// optional ones leave their pages saying what is not configured.
type Handler struct {
	Sessions *auth.Sessions
	// LastUsed notes the Console key's use by a playground run, as the gate notes an API
	// key's (nil: not noted).
	LastUsed *auth.LastUsed
	Auth     *auth.Service
	Ledger   *ledger.Service
	Catalog  *catalog.Catalog
	// Webhooks registers, challenges, tests and lists webhook endpoints (nil: the deployment
	// delivers none, and the webhooks page says so).
	Webhooks *webhooks.Service
	// Directory lists accounts for the operator pages (the store; nil: the list says it is
	// not available).
	Directory AccountDirectory
	// Usage reads the account's spend for the usage page and its CSV download (nil: the page
	// says usage reports are not configured).
	Usage *ledger.Usage
	// KeysUsed reads when the account's keys were last used (nil: the key list leaves it out).
	KeysUsed interface {
		KeysLastUsed(ctx context.Context, accountID string) (map[string]time.Time, error)
	}
	// Secret keys the CSRF tokens (the deployment secret).
	Secret []byte
	// Secure marks cookies Secure: the console's public URL is https.
	Secure bool
	// APIBase is the account API's public URL, for the examples pages show.
	APIBase string
	Now     func() time.Time
	Log     *slog.Logger
	// Jobs lists and reads the account's jobs and runs the playground's submissions.
	Jobs *jobs.Service
	// JobCount counts the jobs a list's filters match (nil: the list shows no total).
	JobCount JobCounter
	// Signer turns stored outputs into the signed links the API hands out.
	Signer jobview.Signer
	// Egress admits a download of bytes of the caller's files before any link is signed: the
	// API's own admission (httpapi.Gate.AdmitEgress: a limited account is refused, the egress
	// bucket takes the bytes). Nil: no link is signed.
	Egress func(w http.ResponseWriter, r *http.Request, p *auth.Principal, bytes int64) error
	// Deliveries reads a job's webhook deliveries; nil leaves them off the job page.
	Deliveries Deliveries
	// Paused reports whether the operator has paused the API or a product: the playground
	// refuses then, as the model hosts do (nil: never paused).
	Paused func(product string) bool
	// SignIns counts failed sign-ins across processes (the store); nil counts them in this
	// process.
	SignIns SignInFailures
	// Proxies are the deployment's trusted load balancers (--trusted-proxies), as the API's
	// gate has them: failed sign-ins are counted per client address read through them.
	Proxies httpapi.Proxies
	// Tickets signs studio tickets for the account's pages (nil: the console mints none).
	Tickets *studio.Tickets

	pages    map[string]*template.Template
	throttle signInThrottle
	forms    sentForms
}

// The cookies of the console.
const (
	sessionCookie = "modelexec_session"
	preCSRFCookie = "modelexec_signin" // double-submit token of the sign-in form
	formLimit     = 256 << 10          // the most a console form may send
)

// viewer is the signed-in person of a request.
type viewer struct {
	User    auth.User
	Session auth.Session
	Account auth.Account // zero for an operator
	CSRF    string
	Once    string // the token of this page's forms (once.go)
}

// view is what every page template receives.
type view struct {
	Title  string
	Nav    string // the section the page belongs to
	V      *viewer
	Flash  string
	Error  string
	Status int
	Data   any
}

// Routes lists the whole console surface, every path under /console.
func (h *Handler) Routes() http.Handler {
	if h.pages == nil {
		h.pages = parsePages()
	}
	h.throttle.store, h.throttle.log = h.SignIns, h.Log
	mux := http.NewServeMux()
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", staticFiles()))
	mux.Handle("GET /console/sign-in", h.public(h.signInForm))
	mux.Handle("POST /console/sign-in", h.public(h.signIn))
	mux.Handle("POST /console/sign-out", h.signedIn(h.signOut))
	mux.Handle("GET /console/{$}", h.signedIn(h.home))
	mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusSeeOther))

	mux.Handle("GET /console/keys", h.account(h.keys))
	mux.Handle("POST /console/keys", h.account(h.mintKey))
	// Keys are managed only here (no API route changes one): a limited account may still
	// revoke a key it fears leaked, or mint one, which can only read.
	mux.Handle("POST /console/keys/{id}/revoke", h.change(ratelimit.Read, h.revokeKey))
	mux.Handle("POST /console/keys/{id}/ceiling", h.change(ratelimit.Read, h.setCeiling))
	h.webhookRoutes(mux)
	h.operatorRoutes(mux)
	h.usageRoutes(mux)
	h.jobRoutes(mux)
	h.studioRoutes(mux)

	mux.Handle("/console/", h.public(func(w http.ResponseWriter, r *http.Request) error {
		// Every other pattern names its method, so this one also answers a method a page
		// does not take: that is 405 with the methods it does, not a page that is not there.
		if allow := strings.Join(httpapi.AllowedMethods(mux, r, "/console/"), ", "); allow != "" {
			w.Header().Set("Allow", allow)
			return refuse(http.StatusMethodNotAllowed, fmt.Sprintf("This page does not take %s requests; it takes %s.", r.Method, allow))
		}
		return errNotFound
	}))
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, nil, http.StatusForbidden, "This form was sent from another site, so it was refused. Open the console and try again.")
	}))
	return secureHeaders(cop.Handler(textPaths(h, mux)))
}

// textPaths answers the 404 page for a path that is not UTF-8 (percent-encoded bytes such as
// %FF): it names no key, job or endpoint, and PostgreSQL refuses such bytes in a query, so no
// page looks it up.
func textPaths(h *Handler, next http.Handler) http.Handler {
	notFound := h.public(func(http.ResponseWriter, *http.Request) error { return errNotFound })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !utf8.ValidString(r.URL.Path) {
			notFound.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// errNotFound renders the console's 404 page.
var errNotFound = errors.New("console: not found")

// pageError is a refusal rendered on the error page with its status.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func refuse(status int, msg string) error { return &pageError{status: status, msg: msg} }

// public serves a page that needs no session.
func (h *Handler) public(fn func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			h.fail(w, r, nil, err)
		}
	})
}

// signedIn serves a page for any signed-in user; unsafe methods must carry the CSRF token.
func (h *Handler) signedIn(fn func(w http.ResponseWriter, r *http.Request, v *viewer) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := h.viewerOf(r)
		if errors.Is(err, auth.ErrSessionEnded) {
			clearCookie(w, sessionCookie, h.Secure)
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, signInURL(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			// A form sent after the session ended (signed out in another tab, say) was not
			// acted on: the sign-in says so, and leads back to the page the form was on.
			next := ""
			if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host {
				next = ref.RequestURI()
			}
			u := signInURL(next)
			if strings.Contains(u, "?") {
				u += "&unsent=1"
			} else {
				u += "?unsent=1"
			}
			http.Redirect(w, r, u, http.StatusSeeOther)
			return
		}
		if err != nil {
			h.fail(w, r, nil, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := readForm(w, r); err != nil {
				h.fail(w, r, v, err)
				return
			}
			if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(v.CSRF)) {
				h.fail(w, r, v, refuse(http.StatusForbidden, "This form has expired or did not come from this console. Reload the page and try again."))
				return
			}
		}
		if err := h.sendOnce(w, r, v, fn); err != nil {
			h.fail(w, r, v, err)
		}
	})
}

// readForm reads a form of at most formLimit bytes, multipart or URL-encoded, with the
// address's query. A form over the limit is 413: one that declares more (Content-Length) is
// refused before a byte of it is read, and its connection is closed, since the rest of it would
// be taken for the next request; one that only turns out larger is refused once the limit is
// reached. One that cannot be read (a stray `%` or a semicolon, a broken multipart body) is
// 400: sending less would not help it.
func readForm(w http.ResponseWriter, r *http.Request) error {
	tooLarge := refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("The form was larger than the console takes (%d KiB), so nothing was sent. Send it with less in it.", formLimit>>10))
	if r.ContentLength > formLimit {
		w.Header().Set("Connection", "close")
		return tooLarge
	}
	r.Body = http.MaxBytesReader(w, r.Body, formLimit)
	var err error
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		err = r.ParseMultipartForm(formLimit)
	} else {
		err = r.ParseForm()
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooBig):
		return tooLarge
	default:
		return refuse(http.StatusBadRequest, "The form could not be read, so nothing was done: its address or its fields were garbled on the way. Reload the page and send it again.")
	}
}

// account serves a page of an account's own (operators have none: they see the operator pages).
func (h *Handler) account(fn func(w http.ResponseWriter, r *http.Request, v *viewer) error) http.Handler {
	return h.signedIn(func(w http.ResponseWriter, r *http.Request, v *viewer) error {
		if v.User.AccountID == "" {
			return refuse(http.StatusNotFound, "Operators have no account pages; open an account from the operator pages.")
		}
		return fn(w, r, v)
	})
}

// change serves an account's form that changes something on the API's bucket (a key and a
// ticket, which the API's read bucket admits; an endpoint or a delivery, on the write bucket): an
// account whose status refuses that bucket is refused before anything is done (standing). A
// form with typed fields (mint, add endpoint, run) is served by account and checks standing
// itself, so its refusal keeps what was typed.
func (h *Handler) change(bucket ratelimit.Bucket, fn func(w http.ResponseWriter, r *http.Request, v *viewer) error) http.Handler {
	return h.account(func(w http.ResponseWriter, r *http.Request, v *viewer) error {
		if err := standing(v.Account, bucket); err != nil {
			return err
		}
		return fn(w, r, v)
	})
}

// standing refuses a form that would act for an account whose status refuses the bucket the API
// takes the same action on, as auth.AccountStanding decides for the API's gate (spec 02):
// account_suspended and account_banned refuse every bucket; account_limited, naming the
// bucket, every one but read (the account may read but not spend or write: a webhook change
// is on write, a run on generate). Sign-out, and the operator's forms acting on other
// accounts, are not asked.
func standing(a auth.Account, bucket ratelimit.Bucket) *pageError {
	e, ok := apierr.As(auth.AccountStanding(a, bucket == ratelimit.Read))
	if !ok {
		return nil
	}
	if e.Code == apierr.AccountLimited {
		return &pageError{status: e.HTTPStatus(),
			msg: fmt.Sprintf("This account is limited: it may read but not spend or write, so nothing was done (%s, bucket %s). The console can still show what the account has.",
				e.Code, bucket)}
	}
	return &pageError{status: e.HTTPStatus(),
		msg: fmt.Sprintf("%s (%s): nothing was done. The console can still show what the account has.",
			strings.TrimSuffix(e.Text(), "."), e.Code)}
}

// operator serves a page for operators only; others are told nothing exists there.
func (h *Handler) operator(fn func(w http.ResponseWriter, r *http.Request, v *viewer) error) http.Handler {
	return h.signedIn(func(w http.ResponseWriter, r *http.Request, v *viewer) error {
		if !v.User.Operator {
			return errNotFound
		}
		return fn(w, r, v)
	})
}

func (h *Handler) viewerOf(r *http.Request) (*viewer, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, auth.ErrSessionEnded
	}
	u, sess, err := h.Sessions.Resolve(r.Context(), c.Value)
	if err != nil {
		return nil, err
	}
	v := &viewer{User: u, Session: sess, CSRF: h.csrfToken("session:" + sess.ID), Once: randomToken()[:22]}
	if u.AccountID != "" {
		if v.Account, err = h.Auth.Account(r.Context(), u.AccountID); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// csrfToken binds a form to a session (or to the sign-in cookie) under the deployment secret.
func (h *Handler) csrfToken(subject string) string {
	m := hmac.New(sha256.New, h.Secret)
	m.Write([]byte("modelexec console csrf\x00" + subject))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func signInURL(next string) string {
	if next == "" || next == "/console/" {
		return "/console/sign-in"
	}
	return "/console/sign-in?next=" + url.QueryEscape(next)
}

// safeNext keeps a post-sign-in redirect inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/console/"
	}
	return next
}

func (h *Handler) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/console", MaxAge: int(maxAge / time.Second),
		HttpOnly: true, Secure: h.Secure, SameSite: http.SameSiteLaxMode})
}

func clearCookie(w http.ResponseWriter, name string, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/console", MaxAge: -1, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode})
}

// render writes a page.
func (h *Handler) render(w http.ResponseWriter, status int, page string, v view) {
	t, ok := h.pages[page]
	if !ok {
		panic("console: no template " + page)
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		h.Log.Error("console: render", "page", page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders err: a catalogued refusal with its status and message, a page error as given,
// anything else as a 500 whose cause goes to the log only.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	var pe *pageError
	switch {
	case errors.Is(err, errNotFound):
		h.renderError(w, r, v, http.StatusNotFound, "There is no such page.")
	case errors.As(err, &pe):
		h.renderError(w, r, v, pe.status, pe.msg)
	default:
		if e, ok := apierr.As(err); ok {
			h.renderError(w, r, v, e.HTTPStatus(), e.Text())
			return
		}
		if errors.Is(err, context.Canceled) {
			return
		}
		h.Log.Error("console: page failed", "path", r.URL.Path, "err", err)
		h.renderError(w, r, v, http.StatusInternalServerError, "Something went wrong on our side; nothing was changed. Try again in a moment.")
	}
}

func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) {
	// The message is the page's heading (error.html), not a line above another heading.
	h.render(w, status, "error", view{Title: http.StatusText(status), V: v, Data: msg, Status: status})
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secureHeaders sets what every console response carries: no caching of pages that show
// account data, no framing, no sniffing, and a content policy that runs only the console's
// own scripts. Images and audio may come from signed links on the blob store's host.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https: http:; "+
			"media-src 'self' blob: https: http:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/console/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}
