package e2e_test

import (
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// arrayBody is a body of just under limit bytes: a valid prompt and one unknown field holding
// an array of elem, repeated.
func arrayBody(elem string, limit int) string {
	head := `{"positivePrompt":"a fox","a":[`
	n := (limit - len(head) - 2) / (len(elem) + 1)
	return head + strings.Repeat(elem+",", n-1) + elem + "]}"
}

// deepBody nests arrays depth deep inside one unknown field.
func deepBody(depth int) string {
	return `{"positivePrompt":"a fox","a":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
}

// TestIN_SHARED06_LargeValuesBounded proves IN-SHARED-06's refusal at the 1 MiB limit for the
// bodies that amplify memory when decoded whole: arrays of ~350,000 empty objects or zeros and
// nesting thousands deep are refused 422 invalid_input before any tree is built, and
// what the server allocates for one refusal (the client's copy of the body included) stays a
// small multiple of the body. Thirty such requests in parallel are measured the same way.
func TestIN_SHARED06_LargeValuesBounded(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		h.submit(mFast, "", `{"positivePrompt":"warm","zz":1}`) // warm pools and caches
		for _, c := range []struct{ name, body string }{
			{"objects", arrayBody("{}", 1<<20)},
			{"zeros", arrayBody("0", 1<<20)},
			{"strings", arrayBody(`""`, 1<<20)},
			{"deep", deepBody(9_000)},
		} {
			// The process's count takes in what its other goroutines allocate meanwhile (the
			// engine's sweeps, the timers): the least of three refusals is the refusal's own.
			var alloc uint64
			var r resp
			for try := range 3 {
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				r = h.submit(mFast, "", c.body)
				runtime.ReadMemStats(&m1)
				if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_input" {
					t.Fatalf("%s: %d %.300s", c.name, r.Code, r.Raw)
				}
				if a := m1.TotalAlloc - m0.TotalAlloc; try == 0 || a < alloc {
					alloc = a
				}
			}
			if !strings.Contains(r.Raw, `"a"`) {
				t.Fatalf("%s: the refusal does not name the unknown field: %.300s", c.name, r.Raw)
			}
			t.Logf("%s: body %d bytes, refusal %d bytes, %.2f MiB allocated (client included)", c.name, len(c.body), len(r.Raw), float64(alloc)/(1<<20))
			if alloc > 4*uint64(len(c.body))+(1<<20) {
				t.Errorf("%s: one refusal of a %d-byte body allocated %.1f MiB", c.name, len(c.body), float64(alloc)/(1<<20))
			}
		}
		body := arrayBody("{}", 1<<20)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		var wg sync.WaitGroup
		codes := make([]int, 30)
		for i := range codes {
			wg.Go(func() { codes[i] = h.submit(mFast, "", body).Code })
		}
		wg.Wait()
		runtime.ReadMemStats(&m1)
		for i, c := range codes {
			if c != http.StatusUnprocessableEntity {
				t.Fatalf("request %d: %d", i, c)
			}
		}
		alloc := m1.TotalAlloc - m0.TotalAlloc
		t.Logf("30 parallel: %.1f MiB allocated in all, %.2f MiB per request", float64(alloc)/(1<<20), float64(alloc)/30/(1<<20))
		if alloc > 30*(4*uint64(len(body))+(1<<20)) {
			t.Errorf("30 refusals allocated %.1f MiB", float64(alloc)/(1<<20))
		}
		if h.balance() != before {
			t.Fatalf("balance moved: %d → %d", before, h.balance())
		}
	})
}
