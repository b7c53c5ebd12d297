package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/server"
)

// TestI10_APIOnlyHandOff: a process without the worker role (server.New with roles
// api,queue,sync) never runs a job. A submit to a model that refuses a queue is charged and
// handed off IN_QUEUE under no lease; while as many hand-offs of that model wait as one worker
// runs at once (its concurrency, 4), the next is service_busy, charged nothing; a hand-off no
// worker starts within HandOffWait fails request_timeout, refunded in full, one event each, even
// while no worker runs at all (the API-only process expires its hand-offs itself).
// Proves issue 10 item 4 (how service_busy is judged in an API-only process).
func TestI10_APIOnlyHandOff(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		h.stopWorker() // the harness's own process plays no part: only the API-only one serves
		var queueH http.Handler
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { queueH.ServeHTTP(w, r) }))
		defer api.Close()
		roles, err := server.ParseRoles("api,queue,sync")
		if err != nil {
			t.Fatal(err)
		}
		srv := h.newServer(server.Config{Roles: roles, PublicURLQueue: api.URL, PublicURLSync: api.URL}, nil,
			func(c *jobs.Config) { c.SweepEvery = 5 * time.Millisecond }, nil)
		queueH = srv.Handler(server.RoleQueue)
		ctx, stop := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() { defer close(ran); _ = srv.RunWorkers(ctx) }()
		defer func() { stop(); <-ran }()
		before := h.balance()
		var ids []string
		var quoted int64
		for i := range 4 {
			r := h.call(http.MethodPost, api.URL+"/svc-serverless/"+mFast, fmt.Sprintf(`{"positivePrompt":"ok %d"}`, i))
			if r.Code != http.StatusOK || r.str("status") != "IN_QUEUE" {
				t.Fatalf("hand-off %d: %d %s", i, r.Code, r.Raw)
			}
			ids = append(ids, r.str("request_id"))
			j := h.job(r.str("request_id"))
			if j.LeaseOwner != "" || j.Reserved != j.Quoted || j.Attempts != 0 || j.StartBy == nil {
				t.Fatalf("hand-off %d: %+v, want charged, under no lease, with a start-by time", i, j)
			}
			quoted += j.Quoted
		}
		if got := h.balance(); got != before-quoted {
			t.Fatalf("balance %d after four hand-offs, want %d (charged at submit)", got, before-quoted)
		}
		busy := h.call(http.MethodPost, api.URL+"/svc-serverless/"+mFast, `{"positivePrompt":"ok 5"}`)
		if busy.Code != http.StatusTooManyRequests || busy.str("error") != "service_busy" {
			t.Fatalf("fifth hand-off with four waiting: %d %s", busy.Code, busy.Raw)
		}
		if got := h.balance(); got != before-quoted {
			t.Fatalf("service_busy charged: balance %d, want %d", got, before-quoted)
		}

		// No worker came, and none runs at all: past HandOffWait the API-only process fails
		// them itself, refunded (it used to leave them charged until a worker came back).
		h.clock.Advance(jobs.DefaultConfig().HandOffWait + time.Second)
		for _, id := range ids {
			deadline := time.Now().Add(5 * time.Second)
			j := h.job(id)
			for ; j.Outcome != jobs.Failed && time.Now().Before(deadline); j = h.job(id) {
				time.Sleep(5 * time.Millisecond)
			}
			if j.Outcome != jobs.Failed || j.ErrorCode != "request_timeout" || j.Charged != 0 {
				t.Fatalf("hand-off past its wait: %+v", j)
			}
		}
		if got := h.balance(); got != before {
			t.Fatalf("balance %d, want %d: every hand-off refunded", got, before)
		}
	})
}
