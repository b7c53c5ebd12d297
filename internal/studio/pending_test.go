package studio

import (
	"encoding/base64"
	"testing"

	y "github.com/skyterra/y-crdt"
)

// TestSTU02_DeletionBeforeItsText: a deletion that arrives before the text it deletes is kept
// (in the stored state too) and applied when the text arrives, so both orders merge to the
// same document.
func TestSTU02_DeletionBeforeItsText(t *testing.T) {
	del, _ := base64.StdEncoding.DecodeString("AAGFBwEABQ==")             // client 901 deletes clocks 0-4
	ins, _ := base64.StdEncoding.DecodeString("AQGFBwAEAQF0BXdvcmxkAA==") // client 901 writes "world" in t
	text := func(state []byte) string {
		doc, err := decode(state)
		if err != nil {
			t.Fatal(err)
		}
		return doc.GetText("t").ToString()
	}
	merged := func(updates ...[]byte) []byte {
		var state []byte
		for _, u := range updates {
			doc, err := decode(state) // each update merged into the stored state, loaded afresh
			if err != nil {
				t.Fatal(err)
			}
			if err := apply(doc, u); err != nil {
				t.Fatal(err)
			}
			if state, err = encode(doc, nil); err != nil {
				t.Fatal(err)
			}
		}
		return state
	}
	if got := text(merged(ins, del)); got != "" {
		t.Fatalf("insert then delete: %q", got)
	}
	if got := text(merged(del)); got != "" || len(deleteSet(merged(del))) != 1 {
		t.Fatalf("the deletion alone is not kept in the stored state: %q %v", got, merged(del))
	}
	if got := text(merged(del, ins)); got != "" {
		t.Fatalf("delete then insert: %q", got)
	}
	doc, _ := decode(nil) // in one document too
	_ = apply(doc, del)
	_ = apply(doc, ins)
	if got := doc.GetText("t").ToString(); got != "" || len(doc.Store.PendingDs) != 0 {
		t.Fatalf("one document: %q, pending %v", got, doc.Store.PendingDs)
	}
}

// TestSTU02_DeletionPartlyAhead: a deletion over text partly held and partly still to come
// deletes the held part at once and the rest when it arrives.
func TestSTU02_DeletionPartlyAhead(t *testing.T) {
	src := y.NewDoc("", true, gcAll, nil, false)
	edit := func(f func(*y.YText)) []byte {
		sv := y.EncodeStateVector(src, nil, y.NewUpdateEncoderV1())
		src.Transact(func(*y.Transaction) { f(src.GetText("t")) }, nil)
		return y.EncodeStateAsUpdate(src, sv)
	}
	hello := edit(func(t *y.YText) { t.Insert(0, "hello", nil) })
	world := edit(func(t *y.YText) { t.Insert(5, " world", nil) })
	gone := edit(func(t *y.YText) { t.Delete(2, 9) })
	doc, _ := decode(nil)
	for _, u := range [][]byte{hello, gone} {
		if err := apply(doc, u); err != nil {
			t.Fatal(err)
		}
	}
	if got := doc.GetText("t").ToString(); got != "he" {
		t.Fatalf("the held part: %q", got)
	}
	state, _ := encode(doc, nil)
	later, _ := decode(state)
	if err := apply(later, world); err != nil {
		t.Fatal(err)
	}
	if got, want := later.GetText("t").ToString(), src.GetText("t").ToString(); got != want || got != "he" {
		t.Fatalf("after the rest arrived: %q, the editor has %q", got, want)
	}
}
