package studio

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	y "github.com/skyterra/y-crdt"
)

// deepUpdate is the update yjs writes for ymap("m").set("deep", {v: {v: … {}}}) nested depth
// levels, by client 1: one ContentAny item whose value is depth objects, each holding the next
// under "v".
func deepUpdate(depth int) []byte {
	u := []byte{1, 1, 1, 0, 0x28, 1, 1, 'm', 4, 'd', 'e', 'e', 'p', 1}
	u = append(u, bytes.Repeat([]byte{118, 1, 1, 'v'}, depth-1)...)
	return append(u, 118, 0, 0)
}

// Issue 27 item 4: any document yjs produces is accepted. A value nested 1,000 levels deep,
// written by yjs 13.6 itself, merges and reads back; so do depths past what yjs can read back,
// up to the reader's bound, beyond which the update is refused as malformed, nothing stored.
func TestI27_DeeplyNestedValuesAccepted(t *testing.T) {
	ctx := context.Background()
	fromYjs, err := os.ReadFile("testdata/deep1000.yjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Operations(fromYjs); err != nil {
		t.Fatalf("yjs's own depth-1000 document refused: %v", err)
	}
	for _, depth := range []int{65, 1000, 5000, maxAnyDepth} {
		svc := newTestService(NewMemStore())
		if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: deepUpdate(depth)}); err != nil {
			t.Fatalf("depth %d refused: %v", depth, err)
		}
		snap, err := svc.Read(ctx, brief, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := newWindow()
		w.load(snap.Update)
		if _, ok := w.doc.GetMap("m").(*y.YMap).Get("deep").(map[string]any); !ok {
			t.Fatalf("depth %d: the stored document lost the value", depth)
		}
	}
	svc := newTestService(NewMemStore())
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: fromYjs}); err != nil {
		t.Fatalf("yjs's depth-1000 document: %v", err)
	}
	var me *MalformedError
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: deepUpdate(maxAnyDepth + 2)}); !errors.As(err, &me) {
		t.Fatalf("past the bound: %v, want a malformed update", err)
	}
}

// FuzzStudioDeepUpdate cuts and flips deep documents: nothing panics and every refusal is a
// malformed update.
func FuzzStudioDeepUpdate(f *testing.F) {
	if b, err := os.ReadFile("testdata/deep1000.yjs"); err == nil {
		f.Add(b, uint16(0), byte(0))
	}
	for _, d := range []int{2, 64, 65, 1000} {
		f.Add(deepUpdate(d), uint16(d), byte(0x7f))
	}
	f.Fuzz(func(t *testing.T, u []byte, at uint16, flip byte) {
		if len(u) > 0 {
			u = append([]byte(nil), u...)
			u[int(at)%len(u)] ^= flip
		}
		svc := newTestService(NewMemStore())
		_, err := svc.Apply(context.Background(), ApplyParams{Key: brief, Update: u})
		var me *MalformedError
		if err != nil && !errors.As(err, &me) {
			t.Fatalf("refusal %T %v, want a malformed update", err, err)
		}
	})
}
