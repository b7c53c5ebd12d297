package accountapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/studio"
)

// Close codes of the live route beyond RFC 6455's (docs/studio.md).
const (
	// closeReplaced: a whole-document save replaced the document while the client was
	// connected; load it into a new document.
	closeReplaced websocket.StatusCode = 4000
	// closeStanding: the key was revoked or expired, or the account banned, suspended or
	// limited; the reason starts with the error code.
	closeStanding websocket.StatusCode = 4001
	// closeStale: the client's copy belongs to an older generation than the stored document.
	closeStale websocket.StatusCode = 4002
)

// liveQueue is how many messages, and liveQueueBytes how many bytes, wait for one slow peer
// before it is dropped; a dropped y-websocket provider reconnects and syncs what it missed.
// The bytes bound what a peer that does not read can make the server hold for it: a sync
// answer of a whole document and the room's awareness states fit, many times over.
const (
	liveQueue      = 256
	liveQueueBytes = 5 * studio.MaxBytes
)

// studioLive serves the y-websocket sync and awareness protocol. A browser connects with a
// ticket (?ticket=, minted by POST …/tickets) from an origin on the operator's allow-list; a
// server-side client sends its key in the Authorization header and no Origin, through the
// order of checks of every route. An API key is never taken from the URL, where logs and
// histories keep it. Each write is then admitted against the connection's edit budget and
// needs studio:write.
func (h *Handler) studioLive(read httpapi.Route) http.Handler {
	keyed := h.Gate.Protect(read, httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		return h.upgradeLive(w, r, httpapi.Principal(r))
	}))
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if sw := h.Gate.Switches; sw != nil && sw.APIDisabled.Load() {
			return apierr.New(apierr.APIDisabled) // check 1 of every route, before the credential is looked at
		}
		q := r.URL.Query()
		if q.Has("key") {
			return apierr.Newf(apierr.InvalidBody, "API keys are never taken in the URL, where logs and browser histories keep them: send the key in the Authorization header, or connect a browser with a ticket from POST /v1/studio/projects/{project}/tickets (?ticket=).")
		}
		if q.Has("ticket") {
			return h.liveByTicket(w, r, q.Get("ticket"))
		}
		keyed.ServeHTTP(w, r) // an Origin header here is a browser without a ticket: the gate refuses it
		return nil
	})
}

// liveByTicket admits a connection that presents a ticket: the origin against the
// allow-list, the ticket (signature, expiry, project, first use), then the lending key and its
// account afresh, the read bucket and the studio scopes.
func (h *Handler) liveByTicket(w http.ResponseWriter, r *http.Request, token string) error {
	if _, browser := r.Header["Origin"]; browser && r.Header.Get("Authorization") != "" {
		// A page holding an API key has it where its scripts and extensions can read it: the
		// same refusal as without a ticket, before the ticket is spent.
		return apierr.Newf(apierr.BrowserOriginRefused, "A browser never sends an API key: open the live route with the ticket alone and keep the key on your server.")
	}
	if origin, ok := r.Header["Origin"]; ok && !h.originAllowed(origin) {
		return apierr.Newf(apierr.BrowserOriginRefused, "The origin %q is not on this service's list of studio origins (--studio-origins); only pages served from those may open the live route.", strings.Join(origin, ", "))
	}
	if h.Tickets == nil || h.TicketClaims == nil {
		return apierr.Newf(apierr.InvalidAPIKey, "This service does not issue studio tickets.")
	}
	tk, err := h.Tickets.Verify(token)
	switch {
	case errors.Is(err, studio.ErrTicketExpired):
		return apierr.Newf(apierr.KeyExpired, "This studio ticket expired (tickets last %d seconds): mint a fresh one for every connection.", int(studio.TicketTTL/time.Second))
	case err != nil:
		return apierr.Newf(apierr.InvalidAPIKey, "This is not a studio ticket this service signed.")
	case tk.Project != r.PathValue("project"):
		return apierr.Newf(apierr.NotFound, "This ticket opens the studio project %q only.", tk.Project)
	}
	if err := liveHandshake(r); err != nil {
		return err // before the ticket is spent: fixed, the handshake may use it
	}
	if err := h.TicketClaims.ClaimTicket(r.Context(), tk.Nonce, tk.Expires, h.Now()); errors.Is(err, studio.ErrTicketUsed) {
		return apierr.Newf(apierr.InvalidAPIKey, "This studio ticket was already used: a ticket opens one connection; mint a fresh one for every connection, reconnects included.")
	} else if err != nil {
		return err
	}
	p, err := h.Auth.Fresh(r.Context(), auth.Principal{Key: auth.KeyRecord{ID: tk.KeyID}})
	if errors.Is(err, auth.ErrNotFound) {
		return apierr.New(apierr.InvalidAPIKey)
	} else if err != nil {
		return err
	}
	if p.Account.ID != tk.Account {
		return apierr.Newf(apierr.InvalidAPIKey, "This is not a studio ticket this service signed.")
	}
	if err := auth.Standing(p.Account, p.Key, h.Now(), true); err != nil {
		return err
	}
	if err := h.Gate.Admit(w, r, &p, ratelimit.Read, 1); err != nil {
		return err
	}
	if req, _ := studioReadScope(r); !req.Satisfied(p.Key.Scopes) {
		return req.Refuse(p.Key.Scopes)
	}
	return h.upgradeLive(w, r, &p)
}

// originAllowed reports whether the Origin header names one origin of the allow-list.
func (h *Handler) originAllowed(origin []string) bool {
	return len(origin) == 1 && slices.ContainsFunc(h.StudioOrigins, func(o string) bool { return strings.EqualFold(o, origin[0]) })
}

// upgradeLive answers the handshake of an admitted caller and serves the connection.
func (h *Handler) upgradeLive(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	k, err := studioKeyOf(r, p.Account.ID)
	if err != nil {
		return err
	}
	gen, hasGen, err := liveGeneration(r)
	if err != nil {
		return err
	}
	if err := liveHandshake(r); err != nil {
		return err
	}
	// The origin was checked above (a ticket's against the allow-list; a key's never gets here
	// with one), so the library's same-origin check has nothing to add.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil // Accept has answered the handshake
	}
	conn.SetReadLimit(studio.MaxBytes + 64<<10) // a first sync carries up to a whole document
	h.serveLive(r, conn, liveParams{key: k, principal: p, generation: gen, hasGeneration: hasGen})
	return nil
}

// liveHandshake checks the WebSocket handshake (RFC 6455 §4.2.1) before the library answers
// it: the library refuses in a line of plain text, and the service's refusals carry its error
// body. A HEAD (the GET route serves it) opens no connection and holds nothing.
func liveHandshake(r *http.Request) error {
	if !httpapi.IsWebSocketUpgrade(r) {
		return apierr.Newf(apierr.InvalidBody, "This route speaks the y-websocket protocol: connect with a WebSocket client (Upgrade: websocket).")
	}
	if r.Method != http.MethodGet {
		return apierr.Newf(apierr.InvalidBody, "A WebSocket handshake is a GET request; a %s opens no connection.", r.Method)
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		return apierr.Newf(apierr.InvalidBody, "Sec-WebSocket-Version must be 13, the version of RFC 6455 this route speaks; got %q.", v).
			WithHeader("Sec-WebSocket-Version", "13")
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return apierr.Newf(apierr.InvalidBody, "A WebSocket handshake sends one Sec-WebSocket-Key header (16 random bytes in base64); this one sent %d.", len(keys))
	}
	if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(b) != 16 {
		return apierr.Newf(apierr.InvalidBody, "Sec-WebSocket-Key must be 16 random bytes in base64 (24 characters).")
	}
	return nil
}

// liveGeneration reads the optional `generation` query parameter: the generation of the copy
// the client holds.
func liveGeneration(r *http.Request) (int64, bool, error) {
	v := r.URL.Query().Get("generation")
	if v == "" {
		return 0, false, nil
	}
	gen, err := strconv.ParseInt(v, 10, 64)
	if err != nil || gen < 0 {
		return 0, false, apierr.Newf(apierr.InvalidBody, "generation must be a whole number, 0 or more (the generation of the document you loaded); got %q.", v)
	}
	return gen, true, nil
}

// livePeer is one connection as the room sees it: a bounded queue drained by one writer.
type livePeer struct {
	out    chan []byte
	queued atomic.Int64 // bytes in out
	once   sync.Once
	stop   chan struct{}
	code   websocket.StatusCode
	why    string
}

func (lp *livePeer) end(code websocket.StatusCode, why string) {
	lp.once.Do(func() { lp.code, lp.why = code, why; close(lp.stop) })
}

func (lp *livePeer) Send(msg []byte) {
	if lp.queued.Add(int64(len(msg))) > liveQueueBytes {
		lp.queued.Add(-int64(len(msg)))
		lp.end(websocket.StatusPolicyViolation, "too slow to keep up; reconnect to sync")
		return
	}
	select {
	case lp.out <- msg:
	default:
		lp.queued.Add(-int64(len(msg)))
		lp.end(websocket.StatusPolicyViolation, "too slow to keep up; reconnect to sync")
	}
}

func (lp *livePeer) Replaced() {
	lp.end(closeReplaced, "document replaced by a whole-document save; reconnect to load it")
}

// liveParams is one admitted connection: its document, its caller, the generation it holds.
type liveParams struct {
	key           studio.Key
	principal     *auth.Principal
	generation    int64
	hasGeneration bool
}

func (h *Handler) serveLive(r *http.Request, conn *websocket.Conn, lp liveParams) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	k, p := lp.key, lp.principal
	peer := &livePeer{out: make(chan []byte, liveQueue), stop: make(chan struct{})}
	sess, err := h.Studio.Join(ctx, studio.JoinParams{Key: k, Peer: peer, CanWrite: slices.Contains(p.Key.Scopes, auth.StudioWrite),
		Admit: h.editAdmission(p), Generation: lp.generation, HasGeneration: lp.hasGeneration})
	if err != nil {
		h.Log.Error("studio live join", "err", err, "project", k.Project, "doc", string(k.Doc))
		conn.Close(websocket.StatusInternalError, "the document could not be loaded")
		return
	}
	defer sess.Close()

	var loops sync.WaitGroup // the writer and the watcher: owned here, waited for below
	loops.Add(2)
	go func() { defer loops.Done(); writeLive(ctx, conn, peer) }()
	go func() { defer loops.Done(); h.watchLive(ctx, peer, sess, *p) }()
	closed := make(chan struct{})
	go func() { // whoever ends the session (the reader always does), the close frame says why
		defer close(closed)
		<-peer.stop
		conn.Close(peer.code, truncateReason(peer.why))
	}()
	h.readLive(ctx, conn, peer, sess, k)
	<-closed
	cancel()
	loops.Wait()
}

// readLive hands the client's messages to the session until either side ends the connection.
func (h *Handler) readLive(ctx context.Context, conn *websocket.Conn, peer *livePeer, sess *studio.Session, k studio.Key) {
	for {
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			peer.end(websocket.StatusNormalClosure, "")
			return
		}
		if typ != websocket.MessageBinary {
			peer.end(websocket.StatusUnsupportedData, "send y-websocket messages as binary frames")
			return
		}
		if err := sess.Receive(ctx, msg); err != nil && !errors.Is(err, studio.ErrReadOnly) {
			code, why := liveClose(err)
			if code == websocket.StatusInternalError {
				h.Log.Error("studio live", "err", err, "project", k.Project, "doc", string(k.Doc))
			}
			peer.end(code, why)
			return
		}
	}
}

// writeLive sends the peer's queue to the client until the session ends.
func writeLive(ctx context.Context, conn *websocket.Conn, peer *livePeer) {
	for {
		select {
		case msg := <-peer.out:
			peer.queued.Add(-int64(len(msg)))
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
}

// liveRecheck is how often an open connection's key and account are read again, so a
// revocation, an expiry or a ban closes it within a second on every process.
const liveRecheck = time.Second

// watchLive reads the caller's key and account afresh every StudioRecheck (default
// liveRecheck) and ends the connection with closeStanding when they no longer stand, or with
// closeReplaced when a save on another process replaced the document.
func (h *Handler) watchLive(ctx context.Context, peer *livePeer, sess *studio.Session, p auth.Principal) {
	every := h.StudioRecheck
	if every <= 0 {
		every = liveRecheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-peer.stop:
			return
		case <-t.C:
			err := h.standing(ctx, p, true)
			if _, refused := apierr.As(err); refused {
				peer.end(standingClose(err))
				return
			} else if err != nil {
				// The store did not answer: keep the connection (its writes are checked
				// afresh each) and try again at the next tick.
				h.Log.Warn("studio live: re-reading the key", "err", err, "key_id", p.Key.ID)
			}
			if outdated, _ := sess.Outdated(ctx); outdated {
				peer.Replaced()
				return
			}
		}
	}
}

// standing reads p's key and account afresh and answers the refusal their standing calls for.
func (h *Handler) standing(ctx context.Context, p auth.Principal, readOnly bool) error {
	return h.Auth.Stands(ctx, p, readOnly)
}

// editAdmission admits each write of a connection: the caller still stands (read afresh, so
// nothing written after a revocation is stored), and the edit fits the connection's budget.
// The first sync reply is not charged: it brings what the client held before it connected
// (at most a whole document, within the size limit), once per connection, and a client with a
// large document must be able to sync it.
func (h *Handler) editAdmission(p *auth.Principal) func(ctx context.Context, e studio.Edit) error {
	var mu sync.Mutex
	budget := studio.NewEditBudget(studio.DefaultEditLimits, h.Now())
	return func(ctx context.Context, e studio.Edit) error {
		if err := h.standing(ctx, *p, false); err != nil {
			return err
		}
		if e.FirstSync {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		next, ok := studio.AdmitEdit(studio.DefaultEditLimits, budget, h.Now(), e.Bytes, e.Ops)
		budget = next
		if !ok {
			return errEditBudget
		}
		return nil
	}
}

// errEditBudget ends a connection that wrote more than its edit budget allows.
var errEditBudget = errors.New("studio live: edit budget spent")

// liveClose picks the close code for a refused message: the sync protocol has no error
// message, so the reason travels in the close frame.
func liveClose(err error) (websocket.StatusCode, string) {
	var me *studio.MalformedError
	var tl *studio.TooLargeError
	var ae *studio.AwarenessError
	var se *studio.StaleError
	switch {
	case errors.As(err, &me):
		return websocket.StatusInvalidFramePayloadData, me.Error() + "; nothing was changed"
	case errors.As(err, &tl):
		return websocket.StatusMessageTooBig, tl.Error()
	case errors.As(err, &ae):
		return websocket.StatusMessageTooBig, ae.Error()
	case errors.As(err, &se):
		return closeStale, fmt.Sprintf("replaced by a save: generation %d; load it into a new Y.Doc and reconnect", se.Current)
	case errors.Is(err, errEditBudget):
		l := studio.DefaultEditLimits
		return websocket.StatusTryAgainLater, fmt.Sprintf("more than %.0f edits or %.0f bytes in %s; reconnect later to sync", l.Ops, l.Bytes, l.Window)
	}
	return standingClose(err)
}

// standingClose is the close of a connection whose caller no longer stands (a revoked or
// expired key, a banned, suspended or limited account): 4001 with the error code first.
func standingClose(err error) (websocket.StatusCode, string) {
	if e, ok := apierr.As(err); ok {
		return closeStanding, e.Error()
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
