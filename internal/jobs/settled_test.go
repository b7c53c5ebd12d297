package jobs

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 30 items 1 and 4: the memory of settled jobs answers reads from memory within its
// bounds: at most settledKept jobs and settledBytes held by their inputs, results and logs, the
// oldest dropped first; a job holding more than settledBytes/64 alone is not kept at all, so
// requests with large inputs cannot fill the process with what they sent.
func TestSettledJobsKeptWithinBounds(t *testing.T) {
	settled := func(i, inputBytes int) Job {
		return Job{RequestID: fmt.Sprint("req-", i), Status: Completed, Outcome: Succeeded,
			Input: []byte(`{"p":"` + strings.Repeat("x", inputBytes) + `"}`)}
	}
	f := newFinals()
	f.keep(settled(0, settledBytes/32))
	if _, ok := f.get("req-0"); ok || f.bytes != 0 {
		t.Fatalf("a job over settledBytes/64 was kept (%d bytes held)", f.bytes)
	}
	const big = 200 << 10
	for i := range 200 {
		f.keep(settled(i, big))
	}
	if f.bytes > settledBytes || len(f.jobs) != settledBytes/heldBytes(settled(0, big)) {
		t.Fatalf("%d jobs holding %d bytes, want at most %d bytes", len(f.jobs), f.bytes, settledBytes)
	}
	if _, ok := f.get("req-199"); !ok {
		t.Fatal("the newest job is not kept")
	}
	if _, ok := f.get("req-0"); ok {
		t.Fatal("the oldest job is still kept past the bound")
	}
	g := newFinals()
	for i := range settledKept + 500 {
		g.keep(settled(i, 10))
	}
	if len(g.jobs) != settledKept || len(g.order)-g.head != settledKept {
		t.Fatalf("%d jobs kept (%d in order), want %d", len(g.jobs), len(g.order)-g.head, settledKept)
	}
	if _, ok := g.get(fmt.Sprint("req-", settledKept+499)); !ok {
		t.Fatal("the newest small job is not kept")
	}
}
