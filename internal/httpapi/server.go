package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelexec/modelexec/internal/apierr"
)

// Wrap is the outermost layer of every surface: request id (X-Request-Id on every response),
// the surface marker, the logger, panic recovery, a time bound on the body (DefaultLimits), and
// an access log line at info (surface, method, route pattern, status, duration, request id and
// the key's public id). It never sets an Access-Control-* header and strips any a handler behind
// it set (KEY-17).
func Wrap(s Surface, log *slog.Logger, h http.Handler) http.Handler {
	return WrapLimits(s, log, DefaultLimits(), h)
}

// WrapLimits is Wrap with the body's time bound given.
func WrapLimits(s Surface, log *slog.Logger, lim Limits, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := NewRequestID()
		ctx := context.WithValue(r.Context(), requestIDKey, id)
		ctx = context.WithValue(ctx, surfaceKey, s)
		ctx = context.WithValue(ctx, loggerKey{}, log)
		slot := &keyIDSlot{}
		ctx = context.WithValue(ctx, keyIDKey, slot)
		r = r.WithContext(ctx)
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w}
		sw.deadline, sw.stall = stallGuard(w, r, lim)
		r = limitBody(w, r, lim, &sw.bodyTimedOut)
		defer func() {
			sw.progress() // what the server still writes after the handler (headers, the buffer) gets its time
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic", "value", v, "stack", string(debug.Stack()), "request_id", id)
				if !sw.wrote {
					WriteError(sw, r, apierr.New(apierr.Internal))
				}
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK // a handler that wrote nothing answered 200
			}
			attrs := []any{"surface", s.name(), "method", r.Method, "route", routeOf(r), "path", loggedPath(r.URL.Path), "status", status,
				"ms", time.Since(start).Milliseconds(), "request_id", id}
			if slot.id != "" {
				attrs = append(attrs, slot.logAttr(), slot.id) // the public id, never the key
			}
			log.Info("request", attrs...)
		}()
		h.ServeHTTP(sw, r)
	})
}

// loggedPath is a request's path as the access log writes it: a segment longer than any id
// the service mints (a key or a session token pasted into a URL) is cut to its first
// characters, so a secret sent by mistake in a path is never written whole.
func loggedPath(p string) string {
	const longest, kept = 40, 12
	if len(p) <= longest {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if len(s) > longest {
			segs[i] = s[:kept] + "…(" + strconv.Itoa(len(s)) + " bytes)"
		}
	}
	return strings.Join(segs, "/")
}

// routeOf is the route pattern that answered r (the ServeMux records it on the request
// Wrap passed on), "unmatched" for the catch-all and for handlers reached without a mux.
func routeOf(r *http.Request) string {
	if r.Pattern == "" || r.Pattern == "/" {
		return "unmatched"
	}
	return r.Pattern
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	// bodyTimedOut is set when the body's deadline passed: the answer closes the connection,
	// whose unread bytes can no longer be told apart from the next request.
	bodyTimedOut atomic.Bool
	// deadline, when set, is moved to now plus stall before each write (Limits.WriteStall).
	deadline *http.ResponseController
	stall    time.Duration
}

// progress gives the next write WriteStall to be taken by the client.
func (w *statusWriter) progress() {
	if w.deadline != nil {
		_ = w.deadline.SetWriteDeadline(time.Now().Add(w.stall))
	}
}

// stallChunk is the most one write hands the connection at once while a stall is bounded:
// WriteStall is the time for a piece this size to be taken, so a client reading steadily,
// however large the answer, is never cut off.
const stallChunk = 64 << 10

func (w *statusWriter) WriteHeader(code int) {
	w.progress()
	if !w.wrote {
		w.status, w.wrote = code, true
		noCORS(w.Header())
		if w.bodyTimedOut.Load() {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
		noCORS(w.Header())
	}
	if w.deadline == nil || len(b) == 0 {
		return w.ResponseWriter.Write(b)
	}
	var n int
	for len(b) > 0 {
		w.progress()
		m, err := w.ResponseWriter.Write(b[:min(len(b), stallChunk)])
		n += m
		if err != nil {
			return n, err
		}
		b = b[m:]
	}
	return n, nil
}

// noCORS removes every Access-Control-* header before the headers go out: the API takes no
// browser calls, so no handler behind Wrap (signed file links included) may invite one (KEY-17).
func noCORS(h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			delete(h, k)
		}
	}
}

// Flush lets streams through.
func (w *statusWriter) Flush() {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
		noCORS(w.Header())
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		w.progress()
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines on held requests).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Fallback answers what no route of mux claims, after checks 1 and 2 like every route: 405
// method_not_allowed with an Allow header when mux serves the path under other methods (ERR-07:
// a 405 is a ValidationError), 404 not_found otherwise (the old /api prefix included). It is
// registered on mux as "/".
func (g *Gate) Fallback(mux *http.ServeMux) http.Handler {
	return g.Protect(Route{Public: true}, Func(func(w http.ResponseWriter, r *http.Request) error {
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return apierr.Newf(apierr.MethodNotAllowed, "%s is not served on %s; use %s.", r.Method, r.URL.Path, strings.Join(allow, ", "))
		}
		return apierr.New(apierr.NotFound)
	}))
}

// Serve registers g's fallback on mux ("/") and answers mux's routes, except that these go to
// the fallback too, which runs the checks every route runs (the Origin refusal, the key, the
// buckets) and answers in the error body:
//   - a path mux would answer with a redirect to its clean form (a doubled slash, a "." or
//     ".." segment): 404 not_found, not a 307 that no check has seen. Clients build paths from
//     the URLs this service gives, which are clean. (ServeMux still redirects a subtree's bare
//     name to its slash form, /console to /console/, which carries nothing.)
//   - a path whose decoded bytes are not UTF-8 (%FF): 404 not_found. Every id the service
//     mints is ASCII, so such a path names nothing, and its value must never reach a query
//     (PostgreSQL refuses the bytes, which would answer 500).
//   - CONNECT, which no route takes: 405 method_not_allowed on a path served under other
//     methods, as any other method no route takes, 404 otherwise (its usual host:port target
//     is no path). ServeMux matches CONNECT by rules of its own and answers a miss with a
//     plain-text 404.
func (g *Gate) Serve(mux *http.ServeMux) http.Handler {
	fallback := g.Fallback(mux)
	mux.Handle("/", fallback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect || !routable(r) {
			fallback.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// routable says a route may serve r's path: it is in its clean form and its decoded bytes
// are UTF-8.
func routable(r *http.Request) bool {
	p := r.URL.EscapedPath()
	return cleanPath(p) == p && utf8.ValidString(r.URL.Path)
}

// cleanPath is the form ServeMux redirects a path to: rooted, without "." and ".." segments or
// doubled slashes, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		np += "/"
	}
	return np
}

// allowedMethods lists the methods under which mux routes r's path to a route other than the
// catch-all "/".
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	if !routable(r) {
		return nil // no route serves a path in this form, whatever the method
	}
	return AllowedMethods(mux, r, "/")
}

// AllowedMethods lists the methods under which mux routes r's path to a pattern other than
// catchAll (a GET route serves HEAD too): the Allow header of a 405. Every surface asks it.
func AllowedMethods(mux *http.ServeMux, r *http.Request, catchAll string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.WithContext(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != catchAll {
			out = append(out, m)
		}
	}
	return out
}
