package studio

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Idle documents stay decoded up to a number and up to a sum of stored bytes: a few large
// documents, each decoded to tens of times its stored bytes, were kept in memory while idle
// for as long as the process ran (41-byte updates to 24 such documents held 1.7 GB).
func TestIdleDocumentsKeptDecodedAreBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	svc := NewService(Config{Store: NewMemStore(), Now: func() time.Time { return t0 }, CacheBytes: 4096})
	small, large := brief, Key{Account: "acct_a", Project: "big", Doc: Brief}
	if _, err := svc.Apply(ctx, ApplyParams{Key: small, Update: newWindow().insert(0, "a short brief")}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Apply(ctx, ApplyParams{Key: large, Update: newWindow().insert(0, strings.Repeat("a long brief ", 1000))}); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	_, smallKept := svc.entries[small]
	_, largeKept := svc.entries[large]
	svc.mu.Unlock()
	if !smallKept || largeKept {
		t.Fatalf("kept decoded: the small document %v, the large one %v; want only the small one", smallKept, largeKept)
	}
	// The large document still reads and takes updates, decoded again when used.
	w := newWindow()
	if ack, err := svc.Apply(ctx, ApplyParams{Key: large, Update: w.insert(0, "more ")}); err != nil || ack.Rev != 2 {
		t.Fatalf("an update to the large document: %+v %v", ack, err)
	}
}
