package studio

import (
	"context"
	"errors"
	"reflect"
	"testing"

	y "github.com/skyterra/y-crdt"
)

// Issue 27 item 3: what saves dropped, kept over every generation, tells a pre-save copy from
// a copy of the stored generation, whatever generation the copy last saw.
func TestI27_RetiredRanges(t *testing.T) {
	r := retired{}.with(map[uint64]uint64{1: 10, 2: 5, 3: 4}, map[uint64]uint64{2: 5, 3: 2, 9: 3})
	r = r.with(map[uint64]uint64{3: 6, 9: 3}, map[uint64]uint64{7: 1})
	want := retired{1: {{0, 10}}, 3: {{2, 4}, {0, 6}}, 9: {{0, 3}}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("retired %v, want %v", r, want)
	}
	back, err := decodeRetired(r.encode())
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("decoded %v %v", back, err)
	}
	for _, c := range []struct {
		sv    map[uint64]uint64
		holds bool
	}{
		{map[uint64]uint64{}, false},
		{map[uint64]uint64{7: 1, 42: 100}, false}, // the saved document and new edits
		{map[uint64]uint64{2: 5}, false},          // kept by the save
		{map[uint64]uint64{1: 1}, true},           // dropped by the first save
		{map[uint64]uint64{9: 3, 7: 1}, true},     // dropped by the second
	} {
		if got := r.holds(c.sv); got != c.holds {
			t.Errorf("holds(%v) = %v, want %v", c.sv, got, c.holds)
		}
	}
	if _, err := decodeRetired([]byte{1, 1, 5}); err == nil {
		t.Error("a cut encoding decodes")
	}
}

// A live peer that did not say its generation is placed by its first sync: a pre-save copy is
// refused before it is merged, the saved document's copy and offline edits made on it are not.
func TestI27_PeersPlacedByWhatTheyHold(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	old := newWindow()
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: old.insert(0, "old draft")}); err != nil {
		t.Fatal(err)
	}
	saved := newWindow()
	saved.insert(0, "restored")
	if _, err := svc.Save(ctx, SaveParams{Key: brief, State: y.EncodeStateAsUpdate(saved.doc, nil), Rev: 1}); err != nil {
		t.Fatal(err)
	}
	join := func(w *window) error {
		ss, err := svc.Join(ctx, JoinParams{Key: brief, Peer: discard{}, CanWrite: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		return ss.Receive(ctx, syncMessage(syncStep1, y.EncodeStateVector(w.doc, nil, y.NewUpdateEncoderV1())))
	}
	var se *StaleError
	if err := join(old); !errors.As(err, &se) || se.Current != 1 {
		t.Fatalf("pre-save copy: %v, want stale at generation 1", err)
	}
	saved.insert(8, " and more")
	if err := join(saved); err != nil {
		t.Fatalf("the saved copy with an offline edit: %v", err)
	}
	if err := join(newWindow()); err != nil {
		t.Fatalf("an empty copy: %v", err)
	}
}

type discard struct{}

func (discard) Send([]byte) {}
func (discard) Replaced()   {}
