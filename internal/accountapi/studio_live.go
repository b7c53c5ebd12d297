package accountapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/studio"
)

// Close codes of the live route beyond RFC 6455's: the document was replaced by a
// whole-document save (the provider reconnects and loads it).
const closeReplaced websocket.StatusCode = 4000

// liveQueue is how many messages wait for one slow peer before it is dropped; a dropped
// y-websocket provider reconnects and syncs what it missed.
const liveQueue = 256

// studioLive serves the y-websocket sync and awareness protocol to server-side clients. The
// order of checks is every route's: a request carrying an Origin header (a browser's) is
// refused browser_origin_refused before its key is looked at, as API keys are never to be used
// from a browser (spec 02); then the key (the Authorization header, or the `key` query
// parameter for clients whose WebSocket library sends no headers), the read bucket to connect,
// studio:read or studio:write; each write is then admitted against the write bucket, and needs
// studio:write.
func (h *Handler) studioLive(read httpapi.Route) http.Handler {
	inner := h.Gate.Protect(read, httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		k, err := studioKey(r)
		if err != nil {
			return err
		}
		if !websocketUpgrade(r) {
			return apierr.Newf(apierr.InvalidBody, "This route speaks the y-websocket protocol: connect with a WebSocket client (Upgrade: websocket).")
		}
		p := httpapi.Principal(r)
		// No Origin reached this point (the gate refused it): the origin check is the gate's.
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return nil // Accept has answered the handshake
		}
		conn.SetReadLimit(studio.MaxBytes + 64<<10) // a first sync carries up to a whole document
		h.serveLive(r, conn, k, p)
		return nil
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		if key := r.URL.Query().Get("key"); key != "" && r.Header.Get("Authorization") == "" {
			r2.Header.Set("Authorization", "Bearer "+key)
		}
		inner.ServeHTTP(w, r2)
	})
}

func websocketUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
			}
		}
	}
	return false
}

// livePeer is one connection as the room sees it: a bounded queue drained by one writer.
type livePeer struct {
	out  chan []byte
	once sync.Once
	stop chan struct{}
	code websocket.StatusCode
	why  string
}

func (lp *livePeer) end(code websocket.StatusCode, why string) {
	lp.once.Do(func() { lp.code, lp.why = code, why; close(lp.stop) })
}

func (lp *livePeer) Send(msg []byte) {
	select {
	case lp.out <- msg:
	default:
		lp.end(websocket.StatusPolicyViolation, "too slow to keep up; reconnect to sync")
	}
}

func (lp *livePeer) Replaced() {
	lp.end(closeReplaced, "document replaced by a whole-document save; reconnect to load it")
}

// headerSink takes the rate headers an admission sets once the connection is a WebSocket.
type headerSink struct{ h http.Header }

func (s headerSink) Header() http.Header       { return s.h }
func (headerSink) Write(b []byte) (int, error) { return len(b), nil }
func (headerSink) WriteHeader(int)             {}

func (h *Handler) serveLive(r *http.Request, conn *websocket.Conn, k studio.Key, p *auth.Principal) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	peer := &livePeer{out: make(chan []byte, liveQueue), stop: make(chan struct{})}
	canWrite := slices.Contains(p.Key.Scopes, auth.StudioWrite)
	sess, err := h.Studio.Join(ctx, studio.JoinParams{Key: k, Peer: peer, CanWrite: canWrite,
		Admit: func(context.Context) error {
			return h.Gate.Admit(headerSink{http.Header{}}, r, p, ratelimit.Write, 1)
		}})
	if err != nil {
		h.Log.Error("studio live join", "err", err, "project", k.Project, "doc", string(k.Doc))
		conn.Close(websocket.StatusInternalError, "the document could not be loaded")
		return
	}
	defer sess.Close()

	// The writer: owned by this handler, which waits for it before returning.
	written := make(chan struct{})
	go func() {
		defer close(written)
		for {
			select {
			case msg := <-peer.out:
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
				err := conn.Write(wctx, websocket.MessageBinary, msg)
				wcancel()
				if err != nil {
					peer.end(websocket.StatusGoingAway, "")
					return
				}
			case <-peer.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	closed := make(chan struct{})
	go func() { // whoever ends the session, the close frame says why
		defer close(closed)
		select {
		case <-peer.stop:
			conn.Close(peer.code, truncateReason(peer.why))
		case <-ctx.Done():
		}
	}()

	for {
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			peer.end(websocket.StatusNormalClosure, "")
			break
		}
		if typ != websocket.MessageBinary {
			peer.end(websocket.StatusUnsupportedData, "send y-websocket messages as binary frames")
			break
		}
		if err := sess.Receive(ctx, msg); err != nil && !errors.Is(err, studio.ErrReadOnly) {
			code, why := liveClose(err)
			if code == websocket.StatusInternalError {
				h.Log.Error("studio live", "err", err, "project", k.Project, "doc", string(k.Doc))
			}
			peer.end(code, why)
			break
		}
	}
	<-closed
	cancel()
	<-written
}

// liveClose picks the close code for a refused message: the sync protocol has no error
// message, so the reason travels in the close frame.
func liveClose(err error) (websocket.StatusCode, string) {
	var me *studio.MalformedError
	var tl *studio.TooLargeError
	switch {
	case errors.As(err, &me):
		return websocket.StatusInvalidFramePayloadData, me.Error() + "; nothing was changed"
	case errors.As(err, &tl):
		return websocket.StatusMessageTooBig, tl.Error()
	}
	if e, ok := apierr.As(err); ok && e.Entry().Status == http.StatusTooManyRequests {
		return websocket.StatusTryAgainLater, "rate limit reached on the write bucket; reconnect later to sync"
	} else if ok {
		return websocket.StatusPolicyViolation, e.Error()
	}
	return websocket.StatusInternalError, "something went wrong on our side"
}

// truncateReason keeps a close reason within the 123 bytes a close frame allows.
func truncateReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	s = s[:120]
	for len(s) > 0 && s[len(s)-1]&0xc0 == 0x80 {
		s = s[:len(s)-1]
	}
	return s[:len(s)-1] + "..."
}
