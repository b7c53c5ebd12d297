package studio

import (
	"context"
	"strings"
	"testing"

	y "github.com/skyterra/y-crdt"
)

// STU-09: deletes merge too. One window deletes text the other wrote while the other appends;
// both converge on the server's document (the library's garbage collection of deleted items
// runs on every merge).
func TestSTU09_ConcurrentDeletesConverge(t *testing.T) {
	ctx := context.Background()
	svc := newTestService(NewMemStore())
	a, b := newWindow(), newWindow()
	empty := []byte{0}
	a.insert(0, "Launch plan")
	b.insert(0, "Budget: 3 weeks")
	sync := func() {
		t.Helper()
		for _, w := range []*window{a, b} {
			s, err := svc.Read(ctx, brief, y.EncodeStateVector(w.doc, nil, y.NewUpdateEncoderV1()))
			if err != nil {
				t.Fatal(err)
			}
			w.load(s.Update)
		}
	}
	for _, w := range []*window{a, b} {
		if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: y.EncodeStateAsUpdate(w.doc, empty)}); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	sa := y.EncodeStateVector(a.doc, nil, y.NewUpdateEncoderV1())
	sb := y.EncodeStateVector(b.doc, nil, y.NewUpdateEncoderV1())
	a.doc.Transact(func(*y.Transaction) { a.doc.GetText("body").Delete(0, 6) }, nil)
	b.insert(b.doc.GetText("body").Length(), " approved")
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: y.EncodeStateAsUpdate(a.doc, sa)}); err != nil {
		t.Fatalf("delete-only update: %v", err)
	}
	if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: y.EncodeStateAsUpdate(b.doc, sb)}); err != nil {
		t.Fatal(err)
	}
	sync()
	if a.text() != b.text() || !strings.HasSuffix(a.text(), " approved") || len(a.text()) != len("Launch planBudget: 3 weeks approved")-6 {
		t.Fatalf("diverged: %q vs %q", a.text(), b.text())
	}
}
