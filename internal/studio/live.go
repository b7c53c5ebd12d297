package studio

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"
)

// The y-websocket protocol (y-protocols sync and awareness): every message starts with a
// varuint type; sync messages carry a second varuint step and one length-prefixed payload.
const (
	msgSync           = 0
	msgAwareness      = 1
	msgAuth           = 2
	msgQueryAwareness = 3

	syncStep1  = 0 // payload: the sender's state vector
	syncStep2  = 1 // payload: the update the receiver lacks
	syncUpdate = 2 // payload: a new update

	authPermissionDenied = 0
)

// Peer is one live connection as the room sees it. Send must not block: it queues msg or, when
// the peer cannot keep up, drops the connection (the client then reconnects and syncs).
type Peer interface {
	Send(msg []byte)
	// Replaced tells the peer its document was replaced by a whole-document save: the
	// connection ends, so the client loads the new document when it reconnects.
	Replaced()
}

// room is the live peers of one document and the awareness states they announced. It is
// guarded by its entry's mu.
type room struct {
	peers   map[Peer]*peerState
	clients map[uint64]awarenessState // awareness client id → last state
	// remote holds the awareness clients whose state a peer of another process announced, and
	// when it was last heard: a process that dies says nothing of its peers leaving, so such a
	// state is dropped once not renewed for RemoteAwarenessTimeout.
	remote map[uint64]time.Time
	// left holds the clients that left in the last RemoteAwarenessTimeout and their last clock:
	// clients re-send every state they hear, so a copy of a state sent before the client left
	// may come back after it; it is not newer, so it is not taken for the client's return.
	left map[uint64]tombstone
	// aware counts the changes to clients: a query for the awareness states is answered only
	// when they changed since the peer's last answer.
	aware uint64
}

// Awareness states are what a cursor, a selection and a name need: a state is at most
// MaxAwarenessState bytes of JSON, and a connection announces at most MaxAwarenessClients
// clients (a provider announces one), so a connection adds at most 64 KiB to what the room
// sends each newcomer, and no connection can fill the room for the others.
const (
	MaxAwarenessState   = 16 << 10
	MaxAwarenessClients = 4
)

// RemoteAwarenessTimeout is how long a state announced on another process lasts unrenewed:
// clients renew theirs every 15 s, and forget another's after 30 s (y-protocols' timeout).
const RemoteAwarenessTimeout = 30 * time.Second

// expireRemote drops the states of other processes' clients not renewed in time and tells the
// room they left, and forgets the clients that left longer ago than that. Under the entry's mu.
func (r *room) expireRemote(now time.Time) {
	for id, t := range r.left {
		if now.Sub(t.at) > RemoteAwarenessTimeout {
			delete(r.left, id)
		}
	}
	gone := map[uint64]awarenessState{}
	for id, heard := range r.remote {
		if now.Sub(heard) <= RemoteAwarenessTimeout {
			continue
		}
		delete(r.remote, id)
		if st, ok := r.clients[id]; ok {
			gone[id] = awarenessState{clock: st.clock + 1, state: "null"}
			r.set(id, gone[id], now)
		}
	}
	if len(gone) > 0 {
		r.aware++
		r.broadcast(awarenessMessage(gone), nil)
	}
}

// AwarenessError refuses an awareness update over those bounds; the connection ends.
type AwarenessError struct{ Reason string }

func (e *AwarenessError) Error() string { return e.Reason }

type peerState struct {
	// clients are the awareness client ids this peer announces: those it was the first to
	// announce. The states of others it re-sends (a stock provider re-sends all it hears) are
	// relays, never its own.
	clients map[uint64]bool
}

type awarenessState struct {
	clock uint64
	state string // JSON; "null" once the client left
}

// tombstone is a client that left: its last clock, and when it left.
type tombstone struct {
	clock uint64
	at    time.Time
}

// current is the room's last word on client id: its state, or "null" at its last clock when it
// left lately; known is false when the room has none.
func (r *room) current(id uint64) (st awarenessState, known bool) {
	if st, ok := r.clients[id]; ok {
		return st, true
	}
	if t, ok := r.left[id]; ok {
		return awarenessState{clock: t.clock, state: "null"}, true
	}
	return awarenessState{}, false
}

// set records client id's state; a "null" one takes the client out and keeps its clock a
// while (left). Under the entry's mu.
func (r *room) set(id uint64, st awarenessState, now time.Time) {
	if st.state == "null" {
		delete(r.clients, id)
		delete(r.remote, id)
		r.left[id] = tombstone{clock: st.clock, at: now}
		return
	}
	r.clients[id] = st
	delete(r.left, id)
}

// owner is who announces an awareness client, as one peer sees it.
type owner int

const (
	ownerNone  owner = iota // no peer of this process: unknown, left, or another process's
	ownerSelf               // the peer itself
	ownerOther              // another peer of this process
)

// ownerOf says who, seen from peer p, announces client id. Under the entry's mu.
func (r *room) ownerOf(id uint64, p Peer) owner {
	for q, ps := range r.peers {
		if ps.clients[id] {
			if q == p {
				return ownerSelf
			}
			return ownerOther
		}
	}
	return ownerNone
}

// awarenessVerdict is what the room does with one entry of a peer's awareness update.
type awarenessVerdict int

const (
	awarenessDrop    awarenessVerdict = iota // not newer than the room's: nothing changes
	awarenessRelay                           // newer: applied, and the peer announces nothing more
	awarenessClaim                           // newer, of a client no peer here announces: the peer announces it
	awarenessRelease                         // the peer's own client left: applied, and the peer no longer announces it
)

// judgeAwareness decides one entry c of a peer's awareness update, given who announces the
// client (o) and the room's last word on it (cur, known). As y-protocols' applyAwarenessUpdate,
// an entry applies only when it is newer: a higher clock, or a removal at the same clock. A
// state whose client no peer here announces is the peer's own (a client announces itself
// first, to the process it is connected to); any other is a relay, which a stock provider
// sends for every state it hears, and is credited to no one.
func judgeAwareness(c awarenessState, o owner, cur awarenessState, known bool) awarenessVerdict {
	switch {
	case !changesAwareness(c, cur, known):
		return awarenessDrop
	case o == ownerSelf && c.state == "null":
		return awarenessRelease
	case o == ownerNone && c.state != "null":
		return awarenessClaim
	default:
		return awarenessRelay
	}
}

// changesAwareness reports whether entry c changes the room's last word on its client (cur,
// known): as y-protocols' applyAwarenessUpdate, only a newer entry does (a higher clock, or a
// removal at the same clock), and a removal of a client the room never had changes nothing.
func changesAwareness(c, cur awarenessState, known bool) bool {
	if !known {
		return c.state != "null"
	}
	return c.clock > cur.clock || c.clock == cur.clock && c.state == "null" && cur.state != "null"
}

func (r *room) broadcast(msg []byte, except Peer) {
	for p := range r.peers {
		if p != except {
			p.Send(msg)
		}
	}
}

// open readies a room without peers for its first. While it had none it relayed nothing, so it
// heard nothing either: the states it holds (all other processes' clients: a peer's own go
// when it leaves) may have changed or left since; they are dropped, and the processes that
// announce them answer with their current ones (Config.AskAwareness). Under the entry's mu.
func (r *room) open() {
	clear(r.clients)
	clear(r.remote)
	r.aware++
}

// replaced tells every peer but except that a whole-document save replaced the document, and
// takes them and their awareness states out of the room.
func (r *room) replaced(except Peer) {
	for p, ps := range r.peers {
		if p == except {
			continue
		}
		p.Replaced()
		for id := range ps.clients {
			delete(r.clients, id)
		}
		delete(r.peers, p)
	}
	r.aware++
}

func appendBytes(b, payload []byte) []byte {
	return append(appendUint(b, uint64(len(payload))), payload...)
}

func syncMessage(step byte, payload []byte) []byte {
	return appendBytes([]byte{msgSync, step}, payload)
}

func syncUpdateMessage(update []byte) []byte { return syncMessage(syncUpdate, update) }

// awarenessMessage encodes states as one awareness update message.
func awarenessMessage(states map[uint64]awarenessState) []byte {
	return appendBytes([]byte{msgAwareness}, awarenessUpdate(states))
}

// awarenessUpdate encodes states as the protocol's awareness update.
func awarenessUpdate(states map[uint64]awarenessState) []byte {
	u := appendUint(nil, uint64(len(states)))
	for id, st := range states {
		u = appendUint(appendUint(u, id), st.clock)
		u = appendBytes(u, []byte(st.state))
	}
	return u
}

// ErrReadOnly is what a Session reports after refusing a write from a peer whose key may only
// read; the peer was sent the protocol's permission-denied message and stays connected.
var ErrReadOnly = errors.New("studio: this key may only read")

// Session is one live peer in one document's room.
type Session struct {
	svc      *Service
	key      Key
	peer     Peer
	e        *entry
	canWrite bool
	// admit is asked before each write that changes something; an error ends the session.
	admit func(ctx context.Context, e Edit) error
	// replied: the peer's first sync reply (step 2) was taken.
	replied bool
	// answered is the room's aware count, plus one, when the peer was last sent the states.
	answered uint64
	// gen is the generation of the document the peer's copy belongs to, once known (genKnown):
	// declared when it joined, or the stored one when its first sync shows it holds nothing.
	gen      int64
	genKnown bool
}

// JoinParams opens a live session.
type JoinParams struct {
	Key      Key
	Peer     Peer
	CanWrite bool
	// Admit, when set, is asked before each write that changes something is merged; its error
	// is returned by Receive. Sync replies with nothing to merge are not admitted: they spend
	// nothing.
	Admit func(ctx context.Context, e Edit) error
	// Generation is the generation of the copy the peer holds, when it said (HasGeneration).
	// Otherwise the peer's first sync places it: a copy holding anything a whole-document save
	// dropped is refused, any other takes the stored generation.
	Generation    int64
	HasGeneration bool
}

// Join adds p.Peer to the document's room and sends it the server's sync step 1 and the
// awareness states of the room. The first peer of a room in this process has the other
// processes asked for the states of theirs (Config.AskAwareness): their answers reach it as
// their peers' updates do (HeardAwareness). Close must follow.
func (s *Service) Join(ctx context.Context, p JoinParams) (*Session, error) {
	e := s.acquire(p.Key)
	e.mu.Lock()
	if err := s.load(ctx, p.Key, e); err != nil {
		e.mu.Unlock()
		s.release(p.Key, e)
		return nil, err
	}
	opened := len(e.room.peers) == 0
	if opened {
		e.room.open()
	}
	e.room.expireRemote(s.now()) // before the newcomer is in the room: it is sent what is left
	e.room.peers[p.Peer] = &peerState{clients: map[uint64]bool{}}
	p.Peer.Send(syncMessage(syncStep1, stateVector(e.doc)))
	ss := &Session{svc: s, key: p.Key, peer: p.Peer, e: e, canWrite: p.CanWrite, admit: p.Admit,
		gen: p.Generation, genKnown: p.HasGeneration}
	if len(e.room.clients) > 0 {
		ss.answered = e.room.aware + 1
		p.Peer.Send(awarenessMessage(e.room.clients))
	}
	e.mu.Unlock()
	if opened && s.ask != nil {
		s.ask(p.Key) // once the newcomer is in the room: the answers are relayed to it
	}
	return ss, nil
}

// Close takes the peer out of the room and tells the others its awareness clients left.
func (ss *Session) Close() {
	e := ss.e
	var left []byte // the peer's clients leaving, for the other processes
	e.mu.Lock()
	if ps, ok := e.room.peers[ss.peer]; ok {
		delete(e.room.peers, ss.peer)
		gone := map[uint64]awarenessState{}
		for id := range ps.clients { // its own clients only: the states it relayed are others'
			if st, ok := e.room.clients[id]; ok {
				gone[id] = awarenessState{clock: st.clock + 1, state: "null"}
				e.room.set(id, gone[id], ss.svc.now())
			}
		}
		if len(gone) > 0 {
			e.room.aware++
			left = awarenessUpdate(gone)
			e.room.broadcast(appendBytes([]byte{msgAwareness}, left), nil)
		}
	}
	e.mu.Unlock()
	if left != nil && ss.svc.aware != nil {
		ss.svc.aware(ss.key, left)
	}
	ss.svc.release(ss.key, e)
}

// Receive handles one message from the peer. Errors: *MalformedError (the message is not the
// protocol or carries a bad update), *TooLargeError, ErrReadOnly (the session stays usable),
// Admit's error, or a store error; every error but ErrReadOnly should end the connection.
func (ss *Session) Receive(ctx context.Context, msg []byte) error {
	r := &reader{b: msg}
	switch t := r.uint("message type"); {
	case r.err != nil:
		return r.err
	case t == msgSync:
		step := r.uint("sync step")
		payload := r.bytes(r.uint("payload length"), "sync payload")
		if r.err == nil && r.pos != len(msg) {
			r.fail("bytes after the sync payload")
		}
		if r.err != nil {
			return r.err
		}
		switch step {
		case syncStep1:
			return ss.answerStep1(payload)
		case syncStep2:
			first := !ss.replied
			ss.replied = true
			return ss.write(ctx, payload, first)
		case syncUpdate:
			return ss.write(ctx, payload, false)
		default:
			return &MalformedError{Offset: 1, Reason: fmt.Sprintf("unknown sync step %d", step)}
		}
	case t == msgAwareness:
		u := r.bytes(r.uint("awareness length"), "awareness update")
		if r.err != nil {
			return r.err
		}
		return ss.awareness(u)
	case t == msgQueryAwareness:
		// Answered once per change of the states: asking again for states the peer was sent
		// costs a byte and would cost the room's whole awareness each time.
		ss.e.mu.Lock()
		defer ss.e.mu.Unlock()
		if len(ss.e.room.clients) > 0 && ss.answered != ss.e.room.aware+1 {
			ss.answered = ss.e.room.aware + 1
			ss.peer.Send(awarenessMessage(ss.e.room.clients))
		}
		return nil
	case t == msgAuth:
		return nil // clients send no auth messages; nothing to do
	default:
		return &MalformedError{Reason: fmt.Sprintf("unknown message type %d", t)}
	}
}

func (ss *Session) answerStep1(sv []byte) error {
	if err := ValidateStateVector(sv); err != nil {
		return &MalformedError{Reason: err.Error()}
	}
	e := ss.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.doc == nil {
		if err := ss.svc.load(context.Background(), ss.key, e); err != nil {
			return err
		}
	}
	if err := ss.placeGeneration(readStateVector(sv)); err != nil {
		return err
	}
	diff, err := encode(e.doc, sv)
	if err != nil {
		return err
	}
	ss.peer.Send(syncMessage(syncStep2, diff))
	return nil
}

// placeGeneration settles which generation the peer's copy belongs to and refuses a copy of an
// older one (*StaleError): after a whole-document save, a provider that reconnects with its
// pre-save copy would merge the removed content back. A peer that did not say its generation
// is placed by what it holds (sv, its state vector; nil when it has not sent it): a copy
// holding anything a save dropped is of an older generation; any other copy (nothing, or
// edits made since, its own included) is of the stored one. Under ss.e.mu.
func (ss *Session) placeGeneration(sv map[uint64]uint64) error {
	e := ss.e
	switch {
	case ss.genKnown:
	case sv != nil && !e.gone.holds(sv), sv == nil && e.gen == 0:
		ss.gen, ss.genKnown = e.gen, true
	default:
		return &StaleError{Doc: ss.key.Doc, Current: e.gen}
	}
	if ss.gen != e.gen {
		return &StaleError{Doc: ss.key.Doc, Current: e.gen}
	}
	return nil
}

// Edit is a write as admission sees it: its size, its operations (Operations), and whether it
// is the peer's first sync reply, which carries whatever the peer holds that the server lacks
// (a whole document at most) and is sent once per connection.
type Edit struct {
	Bytes, Ops int
	FirstSync  bool
}

// Outdated reports whether the stored document is of another generation than the peer's copy
// (false while the copy is not placed yet): a save, on this process or another, replaced it.
func (ss *Session) Outdated(ctx context.Context) (bool, error) {
	ss.e.mu.Lock()
	gen, known := ss.gen, ss.genKnown
	ss.e.mu.Unlock()
	if !known {
		return false, nil
	}
	l, err := ss.svc.store.Lineage(ctx, ss.key)
	return err == nil && l.Generation != gen, err
}

func (ss *Session) write(ctx context.Context, update []byte, firstSync bool) error {
	ops, err := Operations(update)
	if err != nil {
		return err
	}
	if ops == 0 {
		return nil // a sync reply with nothing in it: nothing to store or send on
	}
	ss.e.mu.Lock()
	err = ss.placeGeneration(nil)
	ss.e.mu.Unlock()
	if err != nil {
		return err
	}
	if !ss.canWrite {
		ss.peer.Send(append([]byte{msgAuth, authPermissionDenied}, appendBytes(nil, []byte("this key has studio:read only; edits are not saved"))...))
		return ErrReadOnly
	}
	if ss.admit != nil {
		if err := ss.admit(ctx, Edit{Bytes: len(update), Ops: ops, FirstSync: firstSync}); err != nil {
			return err
		}
	}
	_, err = ss.svc.Apply(ctx, ApplyParams{Key: ss.key, Update: update, Origin: ss.peer, InGeneration: true, Generation: ss.gen})
	return err
}

// awarenessChange is one client's state in an awareness update.
type awarenessChange struct {
	id    uint64
	state awarenessState
}

// parseAwareness reads an awareness update: each state JSON of at most MaxAwarenessState bytes.
func parseAwareness(u []byte) ([]awarenessChange, error) {
	r := &reader{b: u}
	var changes []awarenessChange
	for n := r.count("awareness size"); n > 0 && r.err == nil; n-- {
		id, clock := r.uint("awareness client"), r.uint("awareness clock")
		st := r.string("awareness state")
		if r.err == nil && len(st) > MaxAwarenessState {
			return nil, &AwarenessError{Reason: fmt.Sprintf("an awareness state is at most %d bytes, not %d", MaxAwarenessState, len(st))}
		}
		if r.err == nil && !json.Valid([]byte(st)) {
			r.fail("awareness state is not JSON")
		}
		changes = append(changes, awarenessChange{id, awarenessState{clock, st}})
	}
	if r.err == nil && r.pos != len(u) {
		r.fail("bytes after the awareness update")
	}
	if r.err != nil {
		return nil, r.err
	}
	return changes, nil
}

// awareness applies the entries of an awareness update that are newer than the room's, credits
// the peer with the clients it announces (at most MaxAwarenessClients), and sends what changed
// to every peer of this process, the sender too, and (Aware) to the other processes.
func (ss *Session) awareness(u []byte) error {
	changes, err := parseAwareness(u)
	if err != nil {
		return err
	}
	e := ss.e
	now := ss.svc.now()
	e.mu.Lock()
	ps := e.room.peers[ss.peer]
	if ps == nil {
		e.mu.Unlock()
		return nil // replaced while this message was on its way
	}
	verdicts := make([]awarenessVerdict, len(changes))
	mine := maps.Clone(ps.clients) // what the peer would announce after the update
	for i, c := range changes {
		cur, known := e.room.current(c.id)
		verdicts[i] = judgeAwareness(c.state, e.room.ownerOf(c.id, ss.peer), cur, known)
		switch verdicts[i] {
		case awarenessClaim:
			mine[c.id] = true
		case awarenessRelease:
			delete(mine, c.id)
		}
	}
	if len(mine) > MaxAwarenessClients {
		e.mu.Unlock()
		return &AwarenessError{Reason: fmt.Sprintf("a connection announces at most %d awareness clients", MaxAwarenessClients)}
	}
	ps.clients = mine
	applied := map[uint64]awarenessState{}
	for i, c := range changes {
		if verdicts[i] == awarenessDrop {
			continue
		}
		if verdicts[i] == awarenessClaim {
			delete(e.room.remote, c.id) // announced here now
		}
		e.room.set(c.id, c.state, now)
		applied[c.id] = c.state
	}
	var changed []byte
	if len(applied) > 0 {
		e.room.aware++
		changed = awarenessUpdate(applied)
		// Sent back to the sender too, as y-websocket's own server does: a lone client's
		// provider counts that echo as traffic and keeps its connection.
		e.room.broadcast(appendBytes([]byte{msgAwareness}, changed), nil)
	} else {
		// Nothing new, for the others: the sender alone hears it back (it already has it), as
		// traffic that keeps its connection, and no relay goes round the room again.
		ss.peer.Send(appendBytes([]byte{msgAwareness}, u))
	}
	e.room.expireRemote(now)
	e.mu.Unlock()
	if changed != nil && ss.svc.aware != nil {
		ss.svc.aware(ss.key, changed)
	}
	return nil
}

// HeardAwareness relays to this process's live peers of k an awareness update that a peer of
// another process sent (Aware told it there) and keeps its states for the peers that join
// later, until they leave or go unrenewed for RemoteAwarenessTimeout. A client announced by a
// peer of this process keeps that peer's state. A document without live peers here needs
// nothing; an update that is not the protocol is dropped.
func (s *Service) HeardAwareness(k Key, u []byte) {
	changes, err := parseAwareness(u)
	if err != nil {
		return
	}
	e := s.held(k)
	if e == nil {
		return
	}
	defer s.release(k, e)
	now := s.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.room.peers) == 0 {
		return
	}
	relayed := map[uint64]awarenessState{}
	for _, c := range changes {
		// Not newer: a state this room has (an answer to another room's opening re-sends it),
		// or one overtaken on the way by its client's next.
		if cur, known := e.room.current(c.id); e.room.announcedHere(c.id) || !changesAwareness(c.state, cur, known) {
			continue
		}
		relayed[c.id] = c.state
		e.room.set(c.id, c.state, now)
		if c.state.state != "null" {
			e.room.remote[c.id] = now
		}
	}
	if len(relayed) > 0 {
		e.room.aware++
		e.room.broadcast(awarenessMessage(relayed), nil)
	}
	e.room.expireRemote(now)
}

// answerBytes bounds the states one answer of AnswerAwareness carries (a state larger alone
// goes in an answer of its own): an answer travels in one notice between processes, whose
// payload is at most 7,000 bytes through PostgreSQL's notifications.
const answerBytes = 4 << 10

// AnswerAwareness tells Aware the awareness states the live peers of this process announce
// for k: another process opened a room of k and asked (Config.AskAwareness there), and its
// newcomer hears them when they arrive (HeardAwareness), as it would a change of them. The
// states of other processes' clients are theirs to answer. A process without live peers of k,
// or whose peers announce nothing, answers nothing.
func (s *Service) AnswerAwareness(k Key) {
	if s.aware == nil {
		return
	}
	e := s.held(k)
	if e == nil {
		return
	}
	defer s.release(k, e)
	var answers [][]byte
	batch, size := map[uint64]awarenessState{}, 0
	e.mu.Lock()
	for _, ps := range e.room.peers {
		for id := range ps.clients {
			st, ok := e.room.clients[id]
			if !ok {
				continue
			}
			n := len(st.state) + 2*binary.MaxVarintLen64 + binary.MaxVarintLen32
			if len(batch) > 0 && size+n > answerBytes {
				answers = append(answers, awarenessUpdate(batch))
				batch, size = map[uint64]awarenessState{}, 0
			}
			batch[id], size = st, size+n
		}
	}
	e.mu.Unlock()
	if len(batch) > 0 {
		answers = append(answers, awarenessUpdate(batch))
	}
	for _, u := range answers {
		s.aware(k, u)
	}
}

// announcedHere reports whether a peer of this process announces client id.
func (r *room) announcedHere(id uint64) bool {
	for _, ps := range r.peers {
		if ps.clients[id] {
			return true
		}
	}
	return false
}
