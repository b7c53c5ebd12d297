package studio

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	y "github.com/skyterra/y-crdt"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func newTestService(store Store) *Service {
	return NewService(Config{Store: store, Now: func() time.Time { return t0 }})
}

// window is one editor's copy of a document.
type window struct{ doc *y.Doc }

func newWindow() *window { return &window{doc: y.NewDoc("", true, gcAll, nil, false)} }

// insert types s at pos of the text "body" and returns the update it made.
func (w *window) insert(pos int, s string) []byte {
	before := y.EncodeStateVector(w.doc, nil, y.NewUpdateEncoderV1())
	w.doc.Transact(func(*y.Transaction) { w.doc.GetText("body").Insert(pos, s, nil) }, nil)
	return y.EncodeStateAsUpdate(w.doc, before)
}

func (w *window) text() string { return w.doc.GetText("body").ToString() }

func (w *window) load(update []byte) { y.ApplyUpdate(w.doc, update, nil) }

var brief = Key{Account: "acct_a", Project: "launch", Doc: Brief}

// STU-02, STU-09: two windows edit at once; the service merges both, and a third window that
// loads the stored document reads what both wrote, as do the two windows once they load it.
func TestSTU09_ConcurrentEditsConverge(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	a, b := newWindow(), newWindow()
	ua := a.insert(0, "hello ")
	ub := b.insert(0, "world")
	ack1, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: ua})
	if err != nil || ack1.Rev != 1 || ack1.Doc != Brief {
		t.Fatalf("first apply: %+v %v", ack1, err)
	}
	ack2, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: ub})
	if err != nil || ack2.Rev != 2 || ack2.Bytes <= ack1.Bytes {
		t.Fatalf("second apply: %+v %v", ack2, err)
	}
	snap, err := svc.Read(ctx, brief, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Bytes != len(snap.Update) || snap.Rev != 2 || !bytes.Equal(snap.StateVector, ack2.StateVector) {
		t.Fatalf("read %+v does not match the last ack %+v", snap.Ack, ack2)
	}
	c := newWindow()
	c.load(snap.Update)
	a.load(snap.Update)
	b.load(snap.Update)
	if a.text() != b.text() || b.text() != c.text() || !strings.Contains(c.text(), "hello ") || !strings.Contains(c.text(), "world") {
		t.Fatalf("diverged: %q %q %q", a.text(), b.text(), c.text())
	}
	// The same update again changes nothing and bumps no revision.
	again, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: ua})
	if err != nil || again.Rev != 2 {
		t.Fatalf("re-sent update: %+v %v", again, err)
	}
	// A state vector read returns only what the caller lacks.
	sv := y.EncodeStateVector(a.doc, nil, y.NewUpdateEncoderV1())
	d := newWindow()
	d.load(ua)
	svd := y.EncodeStateVector(d.doc, nil, y.NewUpdateEncoderV1())
	diff, err := svc.Read(ctx, brief, svd)
	if err != nil || len(diff.Update) >= len(snap.Update) {
		t.Fatalf("diff read: %d bytes (whole %d), %v", len(diff.Update), len(snap.Update), err)
	}
	d.load(diff.Update)
	if d.text() != c.text() {
		t.Fatalf("diff did not complete the document: %q vs %q", d.text(), c.text())
	}
	full, _ := svc.Read(ctx, brief, sv)
	if len(full.Update) > 2 {
		t.Fatalf("an up-to-date state vector got %d bytes, want the empty update", len(full.Update))
	}
}

// STU-03, STU-04: a seed is taken while nothing is stored; a second seed is refused with the
// stored document so the caller loads the first.
func TestSTU04_SecondSeedRefusedAndLoadsTheFirst(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	first, second := newWindow(), newWindow()
	u1 := first.insert(0, "brief written before sharing")
	u2 := second.insert(0, "another copy of it")
	if ack, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: u1, Seed: true}); err != nil || ack.Rev != 1 {
		t.Fatalf("first seed: %+v %v", ack, err)
	}
	_, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: u2, Seed: true})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current.Rev != 1 {
		t.Fatalf("second seed: %v, want a conflict at revision 1", err)
	}
	w := newWindow()
	w.load(ce.Current.Update)
	if w.text() != "brief written before sharing" {
		t.Fatalf("the conflict loads %q, want the first seed", w.text())
	}
	if snap, _ := svc.Read(ctx, brief, nil); snap.Rev != 1 {
		t.Fatalf("the refused seed changed the document: rev %d", snap.Rev)
	}
	// A seed after ordinary writes is refused the same way.
	other := Key{Account: "acct_a", Project: "launch", Doc: Canvas("c1")}
	if _, err := svc.Apply(ctx, ApplyParams{Key: other, Update: newWindow().insert(0, "x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Apply(ctx, ApplyParams{Key: other, Update: u2, Seed: true}); !errors.As(err, &ce) {
		t.Fatalf("seed over written canvas: %v", err)
	}
}

// STU-06: a malformed update is refused and nothing changes; LIM-14: a write that would take
// the document past 2,097,152 bytes is refused and nothing changes.
func TestLIM14_MalformedAndTooLargeChangeNothing(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore()
	svc := newTestService(store)
	w := newWindow()
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: w.insert(0, "kept")}); err != nil {
		t.Fatal(err)
	}
	before, _ := store.Document(ctx, brief)
	var me *MalformedError
	for _, bad := range [][]byte{nil, {1}, {0, 0, 0}, {1, 1, 5, 0, 4}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}} {
		if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: bad}); !errors.As(err, &me) {
			t.Fatalf("update %v: %v, want malformed", bad, err)
		}
	}
	big := strings.Repeat("x", MaxBytes/2)
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: w.insert(0, big)}); err != nil {
		t.Fatalf("1 MiB write: %v", err)
	}
	mid, _ := store.Document(ctx, brief)
	var tl *TooLargeError
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: w.insert(0, big)}); !errors.As(err, &tl) || tl.Bytes <= MaxBytes {
		t.Fatalf("past the limit: %v", err)
	}
	after, _ := store.Document(ctx, brief)
	if after.Rev != mid.Rev || !bytes.Equal(after.State, mid.State) || before.Rev != 1 {
		t.Fatalf("a refused write changed the store: rev %d → %d", mid.Rev, after.Rev)
	}
	// The service still merges after a refusal (its decoded copy was rebuilt).
	small := newWindow()
	if ack, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: small.insert(0, "ok")}); err != nil || ack.Rev != mid.Rev+1 {
		t.Fatalf("after refusal: %+v %v", ack, err)
	}
}

// STU-08: the whole-document save replaces the document when the caller's revision is the
// stored one and refuses otherwise with the stored document.
func TestSTU08_SaveReplacesOnlyFromTheStoredRevision(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	w := newWindow()
	w.insert(0, "draft")
	whole := y.EncodeStateAsUpdate(w.doc, nil)
	ack, err := svc.Save(ctx, SaveParams{Key: brief, State: whole, Rev: 0})
	if err != nil || ack.Rev != 1 {
		t.Fatalf("first save: %+v %v", ack, err)
	}
	_, err = svc.Save(ctx, SaveParams{Key: brief, State: whole, Rev: 0})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current.Rev != 1 {
		t.Fatalf("stale save: %v", err)
	}
	w.insert(5, " two")
	if ack, err = svc.Save(ctx, SaveParams{Key: brief, State: y.EncodeStateAsUpdate(w.doc, nil), Rev: 1}); err != nil || ack.Rev != 2 {
		t.Fatalf("second save: %+v %v", ack, err)
	}
	snap, _ := svc.Read(ctx, brief, nil)
	r := newWindow()
	r.load(snap.Update)
	if r.text() != "draft two" {
		t.Fatalf("saved %q", r.text())
	}
}

// Projects are per account: another account's project of the same id is its own, unwritten
// project, which reads as the empty document (issue 27 item 6: the answer the live route gives).
func TestSTU01_ProjectsArePerAccount(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: newWindow().insert(0, "a's")}); err != nil {
		t.Fatal(err)
	}
	other := Key{Account: "acct_b", Project: brief.Project, Doc: Brief}
	if snap, err := svc.Read(ctx, other, nil); err != nil || snap.Rev != 0 || !bytes.Equal(snap.Update, []byte{0, 0}) {
		t.Fatalf("another account's project: rev %d %v %v, want the empty document", snap.Rev, snap.Update, err)
	}
	if _, err := svc.Read(ctx, Key{Account: "acct_a", Project: "launch", Doc: Canvas("none")}, nil); err != nil {
		t.Fatalf("an unwritten canvas of an existing project reads empty: %v", err)
	}
}

// Merges of one document are serialized: many writers at once lose nothing.
func TestSTU09_ParallelWritersLoseNothing(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	const n = 16
	updates := make([][]byte, n)
	for i := range updates {
		updates[i] = newWindow().insert(0, string(rune('a'+i)))
	}
	var wg sync.WaitGroup
	for _, u := range updates {
		wg.Go(func() {
			if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: u}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	snap, _ := svc.Read(ctx, brief, nil)
	r := newWindow()
	r.load(snap.Update)
	if snap.Rev != n || len(r.text()) != n {
		t.Fatalf("rev %d text %q, want %d writes", snap.Rev, r.text(), n)
	}
}

// casStore moves the stored revision under the first Put, as another process would.
type casStore struct {
	*MemStore
	once  sync.Once
	other []byte
}

func (c *casStore) Put(ctx context.Context, p PutParams) error {
	var raced bool
	c.once.Do(func() {
		raced = true
		doc, _ := decode(nil)
		_ = apply(doc, c.other)
		st, _ := encode(doc, nil)
		_ = c.MemStore.Put(ctx, PutParams{Key: p.Key, Prev: p.Prev, State: st, Now: p.Now})
	})
	if raced {
		return c.MemStore.Put(ctx, p) // fails: the revision moved
	}
	return c.MemStore.Put(ctx, p)
}

// A write racing another process's write merges over it instead of overwriting it.
func TestSTU09_CompareAndSwapMergesOverAnotherProcess(t *testing.T) {
	ctx := context.Background()
	cs := &casStore{MemStore: NewMemStore(), other: newWindow().insert(0, "theirs ")}
	svc := newTestService(cs)
	ack, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: newWindow().insert(0, "ours")})
	if err != nil || ack.Rev != 2 {
		t.Fatalf("%+v %v", ack, err)
	}
	snap, _ := svc.Read(ctx, brief, nil)
	r := newWindow()
	r.load(snap.Update)
	if !strings.Contains(r.text(), "theirs") || !strings.Contains(r.text(), "ours") {
		t.Fatalf("lost a write: %q", r.text())
	}
}

// yieldingStore lets other goroutines run around each read and write, as a database's round
// trip would: the window between a process's read and its write is where others write.
type yieldingStore struct{ *MemStore }

func (s yieldingStore) Document(ctx context.Context, k Key) (Stored, error) {
	runtime.Gosched()
	return s.MemStore.Document(ctx, k)
}

func (s yieldingStore) Revision(ctx context.Context, k Key) (int64, error) {
	runtime.Gosched()
	return s.MemStore.Revision(ctx, k)
}

func (s yieldingStore) Put(ctx context.Context, p PutParams) error {
	runtime.Gosched()
	return s.MemStore.Put(ctx, p)
}

// Issue 26: two processes (two services over one store) with twelve writers each merging into
// one brief: every merge that loses a race to the other process reads the winner's document
// and merges over it, so none fails and nothing is lost.
func TestSTU09_TwoProcessesMergeWithoutFailing(t *testing.T) {
	ctx := context.Background()
	store := yieldingStore{NewMemStore()}
	procs := []*Service{newTestService(store), newTestService(store)}
	const writers, each = 24, 10
	var wg sync.WaitGroup
	for i := range writers {
		svc := procs[i%2]
		wg.Go(func() {
			w := newWindow()
			for range each {
				if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: w.insert(0, "x")}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	snap, err := procs[0].Read(ctx, brief, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newWindow()
	r.load(snap.Update)
	if len(r.text()) != writers*each {
		t.Fatalf("%d characters stored, want %d", len(r.text()), writers*each)
	}
}

// listener is a live peer that keeps what it was sent and whether it was told of a save.
type listener struct {
	mu       sync.Mutex
	sent     [][]byte
	replaced bool
}

func (l *listener) Send(msg []byte) { l.mu.Lock(); l.sent = append(l.sent, msg); l.mu.Unlock() }
func (l *listener) Replaced()       { l.mu.Lock(); l.replaced = true; l.mu.Unlock() }
func (l *listener) heard() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent), l.replaced
}

// A save on another process reaches this process's room however this process first reads the
// new generation: a read over HTTP loaded it before the notice came, and the notice, finding
// the process already at that revision, told the room nothing, so its peers kept editing a
// replaced copy (and were sent the next revisions of the new one as updates to it).
func TestSTU08_SaveElsewhereReplacesTheRoomWhateverLoadsItFirst(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore()
	a, b := newTestService(store), newTestService(store)
	if _, err := a.Apply(ctx, ApplyParams{Key: brief, Update: newWindow().insert(0, "draft")}); err != nil {
		t.Fatal(err)
	}
	peer := &listener{}
	sess, err := b.Join(ctx, JoinParams{Key: brief, Peer: peer, CanWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	restored := newWindow()
	restored.insert(0, "restored")
	ack, err := a.Save(ctx, SaveParams{Key: brief, State: y.EncodeStateAsUpdate(restored.doc, nil), Rev: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(ctx, brief, nil); err != nil { // b reads the new generation before any notice
		t.Fatal(err)
	}
	if err := b.Heard(ctx, brief, ack.Rev); err != nil {
		t.Fatal(err)
	}
	if _, replaced := peer.heard(); !replaced {
		t.Fatal("the room's peer was never told its document was replaced")
	}
}

// A refused write (here a document over its size limit) sends the room nothing: decoding the
// same revision again is no news to the peers.
func TestLIM14_RefusedWriteSendsTheRoomNothing(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: newWindow().insert(0, "a")}); err != nil {
		t.Fatal(err)
	}
	w := newWindow()
	w.insert(0, "b")
	w.doc.Transact(func(*y.Transaction) { w.doc.GetText("body").Delete(0, 1) }, nil) // a delete set too
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: y.EncodeStateAsUpdate(w.doc, nil)}); err != nil {
		t.Fatal(err)
	}
	peer := &listener{}
	sess, err := svc.Join(ctx, JoinParams{Key: brief, Peer: peer, CanWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	before, _ := peer.heard()
	huge := newWindow().insert(0, strings.Repeat("x", MaxBytes+1))
	var tl *TooLargeError
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: huge}); !errors.As(err, &tl) {
		t.Fatalf("an update past the size limit: %v", err)
	}
	if _, err := svc.Read(ctx, brief, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := peer.heard(); after != before {
		t.Fatalf("the room was sent %d messages after a refused write", after-before)
	}
}
