package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// Wrap is the outermost layer of every surface: request id (X-Request-Id on every response),
// the surface marker, the logger, panic recovery, and an access log line. It never sets an
// Access-Control-* header (KEY-17).
func Wrap(s Surface, log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := NewRequestID()
		ctx := context.WithValue(r.Context(), requestIDKey, id)
		ctx = context.WithValue(ctx, surfaceKey, s)
		ctx = context.WithValue(ctx, loggerKey{}, log)
		r = r.WithContext(ctx)
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic", "value", v, "stack", string(debug.Stack()), "request_id", id)
				if !sw.wrote {
					WriteError(sw, r, apierr.New(apierr.Internal))
				}
			}
			attrs := []any{"method", r.Method, "path", r.URL.Path, "status", sw.status, "ms", time.Since(start).Milliseconds(), "request_id", id}
			if p := Principal(r); p != nil {
				attrs = append(attrs, "key_id", p.Key.ID)
			}
			log.Debug("request", attrs...)
		}()
		h.ServeHTTP(sw, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streams through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines on held requests).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// NotFound answers every path no route claims (the old /api prefix included) with 404 not_found,
// after the Origin check so a browser call is still refused as such.
func (g *Gate) NotFound() http.Handler {
	return g.Protect(Route{Public: true}, Func(func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.NotFound)
	}))
}
