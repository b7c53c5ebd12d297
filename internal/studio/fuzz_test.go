package studio

import (
	"bytes"
	"context"
	"errors"
	"testing"

	y "github.com/skyterra/y-crdt"
)

// FuzzStudioUpdate feeds arbitrary bytes to the update decoder and the merge behind it, over a
// stored document: nothing panics, a refused update changes nothing stored, and an accepted one
// leaves a document that decodes again and stays within the limit (STU-06, LIM-14).
func FuzzStudioUpdate(f *testing.F) {
	w := newWindow()
	f.Add(w.insert(0, "hello"))
	f.Add(w.insert(2, "ü🙂"))
	w.doc.Transact(func(*y.Transaction) { w.doc.GetText("body").Delete(1, 3) }, nil)
	f.Add(y.EncodeStateAsUpdate(w.doc, nil))
	m := newWindow()
	m.doc.Transact(func(*y.Transaction) {
		m.doc.GetMap("meta").(*y.YMap).Set("k", map[string]any{"a": []any{1.5, true, nil, "s"}})
		m.doc.GetArray("list").Insert(0, []any{1, "two"})
	}, nil)
	f.Add(y.EncodeStateAsUpdate(m.doc, nil))
	f.Add([]byte{0, 0})
	f.Add([]byte{1, 1, 5, 0, 4, 9})

	base := newWindow()
	base.insert(0, "stored text")
	stored := y.EncodeStateAsUpdate(base.doc, nil)

	f.Fuzz(func(t *testing.T, update []byte) {
		ctx := context.Background()
		store := NewMemStore()
		svc := newTestService(store)
		if _, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: stored}); err != nil {
			t.Fatal(err)
		}
		before, _ := store.Document(ctx, brief)
		_, err := svc.Apply(ctx, ApplyParams{Key: brief, Update: update})
		after, _ := store.Document(ctx, brief)
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("refusal %T %v, want a malformed update", err, err)
			}
			if after.Rev != before.Rev || !bytes.Equal(after.State, before.State) {
				t.Fatalf("a refused update changed the store (rev %d → %d)", before.Rev, after.Rev)
			}
			return
		}
		if len(after.State) > MaxBytes {
			t.Fatalf("stored %d bytes", len(after.State))
		}
		if _, err := decode(after.State); err != nil {
			t.Fatalf("the stored document no longer decodes: %v", err)
		}
		if _, err := svc.Read(ctx, brief, []byte{0}); err != nil {
			t.Fatalf("read after an accepted update: %v", err)
		}
	})
}
