package studio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	y "github.com/skyterra/y-crdt"
)

// Ack is the brief state acknowledgement (spec 01): the document's revision, its state vector
// and its weight after the write.
type Ack struct {
	Doc Name
	Rev int64
	// Generation counts the whole-document saves (0: never saved whole); live clients of an
	// older generation may not merge (StaleError).
	Generation  int64
	StateVector []byte
	Bytes       int
}

// Snapshot is a document as read: the acknowledgement's fields and the document (or the part
// of it a given state vector lacks) as one Yjs update.
type Snapshot struct {
	Ack
	Update []byte
}

// TooLargeError refuses a write that would leave the document over MaxBytes; nothing changed.
type TooLargeError struct {
	Doc   Name
	Bytes int // what the document would have weighed
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the %s would be %d bytes after this write, over the limit of %d bytes; nothing was changed", e.Doc, e.Bytes, MaxBytes)
}

// ConflictError refuses a seed when something is already stored, or a whole-document save
// made from a revision that is no longer the stored one. Current is what is stored, so the
// caller can load it.
type ConflictError struct {
	Reason  string
	Current Snapshot
}

func (e *ConflictError) Error() string { return e.Reason }

// Config holds a Service's dependencies.
type Config struct {
	Store Store
	Now   func() time.Time
	Log   *slog.Logger
	// CacheDocs is how many idle documents stay decoded in memory (default 64), and CacheBytes
	// how many stored bytes they may add up to (default 4 MiB): a decoded document takes tens
	// of times its stored bytes, so a few large ones would otherwise hold gigabytes while
	// idle. Documents with a merge under way or live peers always stay.
	CacheDocs  int
	CacheBytes int
	// Changed, when set, is told of every revision this process stores (k and the revision),
	// once it is stored: it tells the service's other processes, whose live peers then hear the
	// change (Heard).
	Changed func(k Key, rev int64)
	// Aware, when set, is told of every awareness update this process's live peers of k send
	// (the protocol's update: states, "null" for clients that left), and of the states of a
	// peer that disconnects, as leaving: it tells the service's other processes, whose live
	// peers then hear it (HeardAwareness).
	Aware func(k Key, update []byte)
	// AskAwareness, when set, is told when a room of k opens in this process (its first live
	// peer joins): it asks the service's other processes for the awareness states of their
	// peers of k, which each answers through its Aware (AnswerAwareness), so the newcomer sees
	// them at once rather than at their clients' next renewal.
	AskAwareness func(k Key)
}

// Service merges, saves and reads documents and runs live rooms.
type Service struct {
	store      Store
	now        func() time.Time
	log        *slog.Logger
	cacheDocs  int
	cacheBytes int
	changed    func(Key, int64)
	aware      func(Key, []byte)
	ask        func(Key)

	mu      sync.Mutex
	entries map[Key]*entry
}

// entry is one document in this process: its lock, its decoded copy, its live room.
type entry struct {
	mu    sync.Mutex // serializes merges, saves and reads of the document in this process
	refs  int        // callers holding the entry, under Service.mu
	used  time.Time  // last release, under Service.mu
	rev   int64      // the cache below is of this stored revision; under mu
	gen   int64      // the stored generation of that revision
	gone  retired    // what the saves up to that generation dropped
	state []byte
	doc   *y.Doc // nil: not decoded (or thrown away after a refused write)
	// had is, while doc is thrown away (forget), the state vector of the copy the room's peers
	// last had: the next load sends them what the stored document holds beyond it.
	had  []byte
	room room
}

// forget throws the decoded copy away (it may be half changed, or behind another process's
// write) so that the next load decodes the stored document; had is the state vector of the
// copy the room's peers last had.
func (e *entry) forget(had []byte) { e.doc, e.had = nil, had }

// NewService returns a Service over cfg.Store.
func NewService(cfg Config) *Service {
	if cfg.CacheDocs <= 0 {
		cfg.CacheDocs = 64
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 4 << 20
	}
	return &Service{store: cfg.Store, now: cfg.Now, log: cfg.Log, cacheDocs: cfg.CacheDocs, cacheBytes: cfg.CacheBytes,
		changed: cfg.Changed, aware: cfg.Aware, ask: cfg.AskAwareness, entries: map[Key]*entry{}}
}

func (s *Service) acquire(k Key) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[k]
	if e == nil {
		e = &entry{room: room{peers: map[Peer]*peerState{}, clients: map[uint64]awarenessState{}, remote: map[uint64]time.Time{}, left: map[uint64]tombstone{}}}
		s.entries[k] = e
	}
	e.refs++
	return e
}

func (s *Service) release(k Key, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	e.used = s.now()
	// The idle documents (no caller holds them: their fields are at rest) and their bytes.
	type idle struct {
		k     Key
		used  time.Time
		bytes int
	}
	var idles []idle
	bytes := 0
	for k, e := range s.entries {
		if e.refs == 0 {
			idles = append(idles, idle{k, e.used, len(e.state)})
			bytes += len(e.state)
		}
	}
	if len(s.entries) <= s.cacheDocs && bytes <= s.cacheBytes {
		return
	}
	// Over the cache's size: drop the idle documents that could never fit, then those used
	// longest ago, until it fits.
	slices.SortFunc(idles, func(a, b idle) int {
		if fa, fb := a.bytes <= s.cacheBytes, b.bytes <= s.cacheBytes; fa != fb {
			if fa {
				return 1
			}
			return -1
		}
		return a.used.Compare(b.used)
	})
	for _, i := range idles {
		if len(s.entries) <= s.cacheDocs && bytes <= s.cacheBytes {
			break
		}
		delete(s.entries, i.k)
		bytes -= i.bytes
	}
}

// emptyState is the encoding of a document that holds nothing: no structs, no deletions. A
// document never written is stored as no bytes at all.
var emptyState = []byte{0, 0}

// decode builds a document from a stored state. The library panics on some inputs it was
// never meant to see; a panic is reported as a malformed update.
func decode(state []byte) (doc *y.Doc, err error) {
	doc = y.NewDoc("", true, gcAll, nil, false)
	if len(state) == 0 {
		return doc, nil
	}
	if err := apply(doc, state); err != nil {
		return nil, err
	}
	return doc, nil
}

func apply(doc *y.Doc, update []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &MalformedError{Reason: fmt.Sprintf("the update does not fit the document (%v)", v)}
		}
	}()
	mergeKeepingDeletes(doc, update)
	return nil
}

func encode(doc *y.Doc, sv []byte) (out []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("studio: encoding the document: %v", v)
		}
	}()
	return y.EncodeStateAsUpdate(doc, sv), nil
}

// stateVector encodes doc's state vector with clients in ascending order, so equal states
// always give equal bytes.
func stateVector(doc *y.Doc) []byte {
	sv := y.GetStateVector(doc.Store)
	clients := make([]int, 0, len(sv))
	for c := range sv {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	b := appendUint(nil, uint64(len(clients)))
	for _, c := range clients {
		b = appendUint(appendUint(b, uint64(c)), uint64(sv[c]))
	}
	return b
}

// contentOf is what decides a document's content, as bytes equal for equal content: its state
// vector (each client's structs run from clock 0, so it names them all) and its deletions, in
// ascending order. Its encoding cannot tell: the library writes object values (a map's
// {"a":1,"b":2}) in Go's random map order, so the same document encodes differently from one
// time to the next. A document holding updates ahead of its state answers nil, told apart by
// its encoding only.
func contentOf(doc *y.Doc) []byte {
	if doc.Store.PendingStructs != nil || len(doc.Store.PendingDs) > 0 {
		return nil
	}
	b := stateVector(doc)
	ds := y.NewDeleteSetFromStructStore(doc.Store)
	clients := make([]y.Number, 0, len(ds.Clients))
	for c := range ds.Clients {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	b = appendUint(b, uint64(len(clients)))
	for _, c := range clients {
		items := ds.Clients[c]
		b = appendUint(appendUint(b, uint64(c)), uint64(len(items)))
		for _, it := range items {
			b = appendUint(appendUint(b, uint64(it.Clock)), uint64(it.Length))
		}
	}
	return b
}

func appendUint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// load brings e's cache to the stored revision, and the room's peers with it (catchUp): a
// revision another process stored reaches them here, whichever of this process's merges,
// reads or notices (Heard) loads it first. Under e.mu.
func (s *Service) load(ctx context.Context, k Key, e *entry) error { return s.loadFor(ctx, k, e, nil) }

// loadFor is load for a write of origin, which a generation found moved answers itself
// (*StaleError) rather than as the rest of the room is told (Peer.Replaced).
func (s *Service) loadFor(ctx context.Context, k Key, e *entry, origin Peer) error {
	if e.doc != nil {
		rev, err := s.store.Revision(ctx, k)
		if err != nil {
			return err
		}
		if rev == e.rev {
			return nil
		}
	}
	st, err := s.store.Document(ctx, k)
	switch {
	case errors.Is(err, ErrNotFound):
		st = Stored{}
	case err != nil:
		return err
	}
	if e.doc != nil && e.rev == st.Rev {
		return nil
	}
	doc, err := decode(st.State)
	if err != nil {
		return fmt.Errorf("studio: stored %s of %s revision %d does not decode: %w", k.Doc, k.Project, st.Rev, err)
	}
	l, err := s.store.Lineage(ctx, k)
	if err != nil {
		return err
	}
	gone, err := decodeRetired(l.Retired)
	if err != nil {
		return fmt.Errorf("studio: stored lineage of %s of %s does not decode: %w", k.Doc, k.Project, err)
	}
	had, gen, rev := e.had, e.gen, e.rev
	if e.doc != nil {
		had = stateVector(e.doc)
	}
	e.doc, e.rev, e.gen, e.gone, e.state, e.had = doc, st.Rev, l.Generation, gone, st.State, nil
	if had == nil || rev == e.rev {
		return nil // the first load, or the same revision decoded again: the room has it
	}
	return e.catchUp(had, gen, origin)
}

// catchUp sends the room's peers what the revision just loaded holds beyond had, the copy they
// last had, as one sync update. A revision of another generation than gen (a whole-document
// save replaced the document) is nothing to add to their copies: they are told so
// (Peer.Replaced), all but origin, whose write is refused (*StaleError). Under e.mu.
func (e *entry) catchUp(had []byte, gen int64, origin Peer) error {
	if len(e.room.peers) == 0 {
		return nil
	}
	if e.gen != gen {
		e.room.replaced(origin)
		return nil
	}
	diff, err := encode(e.doc, had)
	if err != nil {
		return err
	}
	if n, err := Operations(diff); err == nil && n > 0 {
		e.room.broadcast(syncUpdateMessage(diff), nil)
	}
	return nil
}

func (e *entry) ack(k Key) Ack {
	return Ack{Doc: k.Doc, Rev: e.rev, Generation: e.gen, StateVector: stateVector(e.doc), Bytes: len(e.state)}
}

func (e *entry) snapshot(k Key) Snapshot {
	state := e.state
	if len(state) == 0 {
		state = []byte{0, 0} // the empty document as an update
	}
	return Snapshot{Ack: e.ack(k), Update: append([]byte(nil), state...)}
}

// casAttempts bounds the merges of one update when other processes keep writing between this
// one's read and its write; each attempt after a lost race waits a random while, up to
// casBackoff, so that processes racing for one document take turns.
const (
	casAttempts = 64
	casBackoff  = 32 * time.Millisecond
)

// waitTurn waits before merge attempt n again after a lost race (a random while, growing with
// n up to casBackoff) and reports false when ctx ended first.
func waitTurn(ctx context.Context, n int) bool {
	ceiling := min(casBackoff, time.Millisecond<<min(n, 6))
	t := time.NewTimer(time.Duration(rand.Int64N(int64(ceiling)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ApplyParams is one update from a window.
type ApplyParams struct {
	Key    Key
	Update []byte
	// Seed marks the first write of a document that existed before it was shared: accepted
	// only while nothing is stored.
	Seed bool
	// Origin is the live peer the update came from; it is not sent its own update back.
	Origin Peer
	// InGeneration (a live client's update) refuses the merge with *StaleError unless the
	// stored generation is still Generation, the one the update was made in: a whole-document
	// save replaced that copy. Without it (the state route) the update is placed by what it
	// holds: one holding anything a save dropped is refused with *ConflictError.
	InGeneration bool
	Generation   int64
}

// Apply merges p.Update into the stored document and persists the result before any live peer
// hears of it. Errors: *MalformedError (nothing changed), *TooLargeError (nothing changed),
// *ConflictError (a seed while something is stored, or an update holding content a
// whole-document save dropped; Current is the stored document), *StaleError, or a store error.
func (s *Service) Apply(ctx context.Context, p ApplyParams) (Ack, error) {
	if err := Validate(p.Update); err != nil {
		return Ack{}, err
	}
	e := s.acquire(p.Key)
	defer s.release(p.Key, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := s.loadFor(ctx, p.Key, e, p.Origin); err != nil {
			return Ack{}, err
		}
		if p.InGeneration && p.Generation != e.gen {
			return Ack{}, &StaleError{Doc: p.Key.Doc, Current: e.gen}
		}
		if !p.InGeneration && e.gone.written(p.Update) {
			return Ack{}, &ConflictError{Reason: fmt.Sprintf("the update holds content that a whole-document save of the %s dropped (generation %d): it was made from an older copy; load this one", p.Key.Doc, e.gen),
				Current: e.snapshot(p.Key)}
		}
		if p.Seed && e.rev > 0 {
			return Ack{}, &ConflictError{Reason: fmt.Sprintf("the %s already has content (revision %d); a seed is accepted only while nothing is stored: load this one", p.Key.Doc, e.rev),
				Current: e.snapshot(p.Key)}
		}
		prev, had, known := e.state, stateVector(e.doc), contentOf(e.doc)
		if err := apply(e.doc, p.Update); err != nil {
			e.forget(had) // the decoded copy may be half changed: decode again next time
			return Ack{}, err
		}
		state, err := encode(e.doc, nil)
		if err != nil {
			e.forget(had)
			return Ack{}, err
		}
		if len(state) > MaxBytes {
			e.forget(had)
			return Ack{}, &TooLargeError{Doc: p.Key.Doc, Bytes: len(state)}
		}
		same := bytes.Equal(state, prev) || known != nil && bytes.Equal(known, contentOf(e.doc))
		if (same || len(prev) == 0 && bytes.Equal(state, emptyState)) && !(p.Seed && e.rev == 0) {
			return e.ack(p.Key), nil // already known (or still empty): nothing to store or send on
		}
		err = s.store.Put(ctx, PutParams{Key: p.Key, Prev: e.rev, State: state, Now: s.now()})
		if errors.Is(err, ErrRevisionMoved) && attempt < casAttempts {
			e.forget(had) // another process wrote: merge again over its result (load sends it to the room)
			if attempt == 0 || waitTurn(ctx, attempt) {
				continue
			}
		}
		if err != nil {
			e.forget(had)
			return Ack{}, err
		}
		e.rev, e.state = e.rev+1, state
		e.room.broadcast(syncUpdateMessage(p.Update), p.Origin)
		s.tell(p.Key, e.rev)
		return e.ack(p.Key), nil
	}
}

// SaveParams replaces a whole document.
type SaveParams struct {
	Key   Key
	State []byte // the whole document as one Yjs update
	Rev   int64  // the revision the caller's copy was loaded at (0: nothing stored)
}

// Save replaces the stored document with p.State when the stored revision is still p.Rev.
// Live peers are told the document was replaced, so they load it again. Errors:
// *MalformedError, *TooLargeError, *ConflictError (the revision moved; Current is stored).
func (s *Service) Save(ctx context.Context, p SaveParams) (Ack, error) {
	if err := Validate(p.State); err != nil {
		return Ack{}, err
	}
	doc, err := decode(p.State)
	if err != nil {
		return Ack{}, err
	}
	state, err := encode(doc, nil)
	if err != nil {
		return Ack{}, err
	}
	if len(state) > MaxBytes {
		return Ack{}, &TooLargeError{Doc: p.Key.Doc, Bytes: len(state)}
	}
	e := s.acquire(p.Key)
	defer s.release(p.Key, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.load(ctx, p.Key, e); err != nil {
		return Ack{}, err
	}
	conflict := func() error {
		return &ConflictError{Reason: fmt.Sprintf("the %s is at revision %d, not %d: load it, apply your changes and save again", p.Key.Doc, e.rev, p.Rev),
			Current: e.snapshot(p.Key)}
	}
	if e.rev != p.Rev {
		return Ack{}, conflict()
	}
	gone := e.gone.with(stateVectorOf(e.doc), stateVectorOf(doc))
	err = s.store.Replace(ctx, ReplaceParams{PutParams: PutParams{Key: p.Key, Prev: p.Rev, State: state, Now: s.now()}, Retired: gone.encode()})
	if errors.Is(err, ErrRevisionMoved) {
		if err := s.load(ctx, p.Key, e); err != nil {
			return Ack{}, err
		}
		return Ack{}, conflict()
	}
	if err != nil {
		return Ack{}, err
	}
	e.doc, e.rev, e.gen, e.gone, e.state = doc, p.Rev+1, e.gen+1, gone, state
	e.room.replaced(nil)
	s.tell(p.Key, e.rev)
	return e.ack(p.Key), nil
}

// held answers the entry of k, held until release, when this process has one (a document
// with live peers here always has); nil otherwise.
func (s *Service) held(k Key) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[k]
	if e != nil {
		e.refs++
	}
	return e
}

// tell passes a stored revision to Changed, when set.
func (s *Service) tell(k Key, rev int64) {
	if s.changed != nil {
		s.changed(k, rev)
	}
}

// Heard brings this process's live peers of k up to revision rev, stored by another process
// (Changed told it there): they are sent what the stored document holds beyond the copy their
// room last had, or, when a whole-document save replaced it, told so (Peer.Replaced). A
// document without live peers here, or already at rev, needs nothing.
func (s *Service) Heard(ctx context.Context, k Key, rev int64) error {
	e := s.held(k)
	if e == nil {
		return nil
	}
	defer s.release(k, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.room.peers) == 0 || e.doc == nil && e.had == nil || e.rev >= rev {
		return nil
	}
	return s.load(ctx, k, e) // which sends the room what it lacks, or tells it of a save (catchUp)
}

// Read returns the stored document as one update, or, with a state vector, only what that
// state lacks. A document never written, in a project never written too, reads as the empty
// document at revision 0, as the live route syncs it: an editor may open a new project by
// either. sv must have passed ValidateStateVector.
func (s *Service) Read(ctx context.Context, k Key, sv []byte) (Snapshot, error) {
	var err error
	e := s.acquire(k)
	defer s.release(k, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.load(ctx, k, e); err != nil {
		return Snapshot{}, err
	}
	snap := e.snapshot(k)
	if len(sv) > 0 {
		if snap.Update, err = encode(e.doc, sv); err != nil {
			return Snapshot{}, err
		}
	}
	return snap, nil
}

// gcAll lets the library collect every deleted item, as yjs does by default (a nil filter
// makes the library panic on its first collection).
func gcAll(*y.Item) bool { return true }
