package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Limits bound how long a request body may take to arrive. The server's ReadHeaderTimeout covers
// only the headers: without a bound on the body, a client that declares Content-Length: 100000
// and sends 10 bytes holds a goroutine and a socket for as long as it likes. The bound is set
// per request on the connection (a read deadline), so it applies on every listener whatever
// built the http.Server.
//
// The time a body is given grows with what actually arrives, never with what is merely
// declared: a declared length says nothing the route will take (a console form stops at
// 256 KiB, a JSON body at 1 MiB, an upload at its signed maximum), and a client declaring a
// terabyte and sending nothing was once granted months. Each route's reader stops at its own
// limit, so the time any route grants is capped at BodyTimeout plus its limit over BodyMinRate,
// and no route has to restate its limit here.
type Limits struct {
	// BodyTimeout is the time any body is given to arrive in full.
	BodyTimeout time.Duration
	// BodyMinRate, in bytes per second, adds time for a long body (an upload through a signed
	// link): a second on top of BodyTimeout for every BodyMinRate bytes read so far (and its
	// fraction for fewer), up to the declared Content-Length. A body that keeps arriving at BodyMinRate is never cut off;
	// one that stalls is cut BodyTimeout after it began plus what it had earned.
	BodyMinRate int64
	// WriteStall is the longest one write of an answer may wait for the client to take it (a
	// client that stops reading is cut off then): every write and flush moves the connection's
	// write deadline to now plus WriteStall, so a stream or a held answer lasts as long as its
	// client keeps reading.
	WriteStall time.Duration
}

// DefaultLimits is what Wrap applies: 30 s for any body, plus a second per 64 KiB received (up
// to the declared length), and 30 s for a write to make progress.
func DefaultLimits() Limits {
	return Limits{BodyTimeout: 30 * time.Second, BodyMinRate: 64 << 10, WriteStall: 30 * time.Second}
}

// bodyDeadline is the time a body is given once read bytes of it (at most its declared length
// n; -1: unknown) have arrived.
func (l Limits) bodyDeadline(n, read int64) time.Duration {
	d := l.BodyTimeout
	if n >= 0 {
		read = min(read, n)
	}
	if read > 0 && l.BodyMinRate > 0 {
		// In whole seconds and the fraction of one, so no product overflows.
		d += time.Duration(read/l.BodyMinRate)*time.Second + time.Duration(read%l.BodyMinRate)*time.Second/time.Duration(l.BodyMinRate)
	}
	return d
}

// LimitBodies bounds the time every request body of h may take to arrive, for a listener whose
// handlers are not wrapped by Wrap (the operator listener).
func LimitBodies(lim Limits, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var timedOut atomic.Bool
		h.ServeHTTP(w, limitBody(w, r, lim, &timedOut))
	})
}

// errBodyTimeout is what a body read answers once the body's deadline has passed.
var errBodyTimeout = errors.New("httpapi: the request body did not arrive in time")

// limitBody puts a read deadline on the connection for the body of r and returns r with a
// body that moves the deadline on as bytes arrive (bodyDeadline) and lifts it once the body has
// been read to its end: a held request (a synchronous run, a wait) must not be cut off by the
// body's deadline after the body is in. Socket deadlines are wall-clock by nature, so time.Now
// is used here, not the injected clock.
func limitBody(w http.ResponseWriter, r *http.Request, lim Limits, timedOut *atomic.Bool) *http.Request {
	if lim.BodyTimeout <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r
	}
	rc := http.NewResponseController(w)
	start, base := time.Now(), lim.bodyDeadline(r.ContentLength, 0)
	if err := rc.SetReadDeadline(start.Add(base)); err != nil {
		return r // not a connection that takes deadlines (an in-process test recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timedOut: timedOut, lim: lim, start: start, declared: r.ContentLength, earned: base}
	return r
}

type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	timedOut *atomic.Bool
	done     bool
	lim      Limits
	start    time.Time
	declared int64 // Content-Length; -1 when unknown
	read     int64
	// earned is the time the deadline last set gives the body from start.
	earned time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	switch {
	case err == io.EOF && !b.done:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil && isTimeout(err):
		b.timedOut.Store(true)
		return n, errBodyTimeout
	case n > 0 && !b.done:
		if d := b.lim.bodyDeadline(b.declared, b.read); d > b.earned {
			b.earned = d
			_ = b.rc.SetReadDeadline(b.start.Add(d))
		}
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// stallGuard starts the write deadline of one request (statusWriter.progress moves it) through
// the ResponseController, which reaches the connection through every wrapper that unwraps. A
// WebSocket upgrade is left alone: the hijacked connection keeps its own timeouts.
func stallGuard(w http.ResponseWriter, r *http.Request, lim Limits) (*http.ResponseController, time.Duration) {
	if lim.WriteStall <= 0 || IsWebSocketUpgrade(r) {
		return nil, 0
	}
	rc := http.NewResponseController(w)
	if rc.SetWriteDeadline(time.Now().Add(lim.WriteStall)) != nil {
		return nil, 0 // not a connection that takes deadlines (an in-process test recorder)
	}
	return rc, lim.WriteStall
}

// IsWebSocketUpgrade reports whether r asks to become a WebSocket (Connection: upgrade and
// Upgrade: websocket); another Upgrade header is only a header.
func IsWebSocketUpgrade(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return true
			}
		}
	}
	return false
}
