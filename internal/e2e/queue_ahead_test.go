package e2e_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
)

// TestSUB11_MaxQueueLengthCountsOnlyThoseAhead: max_queue_length bounds the waiting requests a
// submit would queue behind, and a normal request goes ahead of every low one. With one job
// running and two low ones waiting, a normal submit with max_queue_length=0 is accepted at
// position 0; a low submit with the same bound is refused queue_too_long with both low ones
// counted; a second normal one with max_queue_length=0 is refused with the first normal one
// counted alone. Proves SUB-11, SUB-14.
func TestSUB11_MaxQueueLengthCountsOnlyThoseAhead(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueue: 1} }}, func(t *testing.T, h *harness) {
		a := h.submit(mQueue, "", `{"positivePrompt":"block-a"}`)
		if a.Code != 200 || a.str("status") != "IN_PROGRESS" {
			t.Fatalf("a: %d %s", a.Code, a.Raw)
		}
		h.waitStarted(1)
		for _, name := range []string{"low-1", "low-2"} {
			r := h.submit(mQueue, "", `{"positivePrompt":"block-`+name+`"}`, "X-Svc-Priority", "low")
			if r.Code != 200 || r.str("status") != "IN_QUEUE" {
				t.Fatalf("%s: %d %s", name, r.Code, r.Raw)
			}
		}
		before := h.balance()

		low := h.submit(mQueue, "max_queue_length=1", `{"positivePrompt":"block-low-3"}`, "X-Svc-Priority", "low")
		expectRefusal(t, h, low, 429, "queue_too_long", before, 3)
		if low.num("waiting") != 2 || low.num("max") != 1 {
			t.Errorf("a low submit counts every waiting request: %s", low.Raw)
		}

		n := h.submit(mQueue, "max_queue_length=0", `{"positivePrompt":"block-n"}`)
		if n.Code != 200 || n.str("status") != "IN_QUEUE" {
			t.Fatalf("a normal submit behind only low requests, max_queue_length=0: %d %s", n.Code, n.Raw)
		}
		if st := h.status(n, false); st.num("queue_position") != 0 {
			t.Errorf("the normal submit waits at %s, want position 0", st.Raw)
		}

		again := h.submit(mQueue, "max_queue_length=0", `{"positivePrompt":"block-n2"}`)
		expectRefusal(t, h, again, 429, "queue_too_long", before, 4)
		if again.num("waiting") != 1 || again.num("max") != 0 {
			t.Errorf("a normal submit counts the normal requests waiting alone: %s", again.Raw)
		}
	})
}
