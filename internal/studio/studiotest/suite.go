// Package studiotest holds the conformance suite every studio.Store passes (MemStore and the
// SQL store on SQLite and PostgreSQL), so the merge engine behaves the same over each.
package studiotest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/studio"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// RunStoreSuite runs the suite; open returns an empty store for each subtest.
func RunStoreSuite(t *testing.T, open func(t *testing.T) studio.Store) {
	t.Run("MissingIsNotFound", func(t *testing.T) { testMissing(t, open(t)) })
	t.Run("CompareAndSwap", func(t *testing.T) { testCAS(t, open(t)) })
	t.Run("PerAccountProjects", func(t *testing.T) { testPerAccount(t, open(t)) })
	t.Run("RacingWritersOneWins", func(t *testing.T) { testRace(t, open(t)) })
	t.Run("ReplaceAdvancesGeneration", func(t *testing.T) { testGeneration(t, open(t)) })
}

// testGeneration: merges keep the lineage; a whole-document save (Replace) advances the
// generation with the revision, under the same compare-and-swap, and stores what it retired.
func testGeneration(t *testing.T, s studio.Store) {
	ctx := context.Background()
	replace := func(k studio.Key, prev int64, state, retired []byte) error {
		return s.Replace(ctx, studio.ReplaceParams{PutParams: studio.PutParams{Key: k, Prev: prev, State: state, Now: t0}, Retired: retired})
	}
	if l, err := s.Lineage(ctx, brief); err != nil || l.Generation != 0 || len(l.Retired) != 0 {
		t.Fatalf("Lineage of nothing: %+v %v", l, err)
	}
	if err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 0, State: []byte{1}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Lineage(ctx, brief); l.Generation != 0 || len(l.Retired) != 0 {
		t.Fatalf("lineage %+v after a merge, want none", l)
	}
	if err := replace(brief, 0, []byte{2}, []byte{9}); !errors.Is(err, studio.ErrRevisionMoved) {
		t.Fatalf("Replace from a stale revision: %v, want ErrRevisionMoved", err)
	}
	if err := replace(brief, 1, []byte{2}, []byte{1, 7, 1, 0, 3}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Document(ctx, brief)
	if l, _ := s.Lineage(ctx, brief); l.Generation != 1 || !bytes.Equal(l.Retired, []byte{1, 7, 1, 0, 3}) || got.Rev != 2 || !bytes.Equal(got.State, []byte{2}) {
		t.Fatalf("after Replace: %+v, %+v", l, got)
	}
	if err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 2, State: []byte{3}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Lineage(ctx, brief); l.Generation != 1 || !bytes.Equal(l.Retired, []byte{1, 7, 1, 0, 3}) {
		t.Fatalf("a merge after a save changed the lineage: %+v", l)
	}
	other := studio.Key{Account: "acct_a", Project: "fresh", Doc: studio.Brief}
	if err := replace(other, 0, []byte{3}, nil); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Lineage(ctx, other); l.Generation != 1 || len(l.Retired) != 0 {
		t.Fatalf("a first save: %+v, want generation 1", l)
	}
}

var brief = studio.Key{Account: "acct_a", Project: "launch", Doc: studio.Brief}

func testMissing(t *testing.T, s studio.Store) {
	ctx := context.Background()
	if _, err := s.Document(ctx, brief); !errors.Is(err, studio.ErrNotFound) {
		t.Fatalf("Document of nothing: %v, want ErrNotFound", err)
	}
	if rev, err := s.Revision(ctx, brief); err != nil || rev != 0 {
		t.Fatalf("Revision of nothing: %d %v, want 0", rev, err)
	}
	if ok, err := s.ProjectExists(ctx, brief.Account, brief.Project); err != nil || ok {
		t.Fatalf("ProjectExists of nothing: %v %v", ok, err)
	}
}

func testCAS(t *testing.T, s studio.Store) {
	ctx := context.Background()
	one, two := []byte{1, 2, 3}, bytes.Repeat([]byte{0, 0xff}, 70000) // binary, past any inline size
	if err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 0, State: one, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 0, State: two, Now: t0}); !errors.Is(err, studio.ErrRevisionMoved) {
		t.Fatalf("second insert: %v, want ErrRevisionMoved", err)
	}
	if err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 2, State: two, Now: t0}); !errors.Is(err, studio.ErrRevisionMoved) {
		t.Fatalf("update from a revision never stored: %v, want ErrRevisionMoved", err)
	}
	got, err := s.Document(ctx, brief)
	if err != nil || got.Rev != 1 || !bytes.Equal(got.State, one) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("after refused writes: %+v %v", got, err)
	}
	if err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 1, State: two, Now: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Document(ctx, brief)
	if err != nil || got.Rev != 2 || !bytes.Equal(got.State, two) || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("after the update: rev %d, %d bytes, %v", got.Rev, len(got.State), err)
	}
	if rev, err := s.Revision(ctx, brief); err != nil || rev != 2 {
		t.Fatalf("Revision: %d %v, want 2", rev, err)
	}
}

func testPerAccount(t *testing.T, s studio.Store) {
	ctx := context.Background()
	canvas := studio.Key{Account: "acct_a", Project: "launch", Doc: studio.Canvas("c1")}
	if err := s.Put(ctx, studio.PutParams{Key: canvas, State: []byte{0, 0}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ProjectExists(ctx, "acct_a", "launch"); err != nil || !ok {
		t.Fatalf("a project with a canvas exists: %v %v", ok, err)
	}
	if ok, _ := s.ProjectExists(ctx, "acct_b", "launch"); ok {
		t.Fatal("another account sees the project")
	}
	if _, err := s.Document(ctx, studio.Key{Account: "acct_b", Project: "launch", Doc: studio.Canvas("c1")}); !errors.Is(err, studio.ErrNotFound) {
		t.Fatalf("another account reads the canvas: %v", err)
	}
	if _, err := s.Document(ctx, brief); !errors.Is(err, studio.ErrNotFound) {
		t.Fatalf("the brief was never written: %v", err)
	}
}

// Eight writers from the same revision at once: exactly one wins.
func testRace(t *testing.T, s studio.Store) {
	ctx := context.Background()
	if err := s.Put(ctx, studio.PutParams{Key: brief, State: []byte{0, 0}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	var won, lost atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			err := s.Put(ctx, studio.PutParams{Key: brief, Prev: 1, State: []byte{byte(i)}, Now: t0})
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, studio.ErrRevisionMoved):
				lost.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != 7 {
		t.Fatalf("won %d lost %d, want 1 and 7", won.Load(), lost.Load())
	}
	if got, _ := s.Document(ctx, brief); got.Rev != 2 {
		t.Fatalf("rev %d, want 2", got.Rev)
	}
}
