package e2e_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// TestI10_APIOnlyHandOff: a process without the worker role (server.New with roles
// api,queue,sync) never runs a job. A submit to a model that refuses a queue is charged and
// handed off IN_QUEUE under no lease; while as many hand-offs of that model wait as one worker
// runs at once (its concurrency, 4), the next is service_busy, charged nothing; a hand-off no
// worker starts within HandOffWait fails request_timeout, refunded in full, one event each.
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
		srv := h.newServer(server.Config{Roles: roles, PublicURLQueue: api.URL, PublicURLSync: api.URL}, nil, nil, nil)
		queueH = srv.Handler(server.RoleQueue)
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

		// No worker came: past HandOffWait a worker's sweep fails them, refunded.
		h.clock.Advance(jobs.DefaultConfig().HandOffWait + time.Second)
		worker := h.newJobs(sqlstore.Jobs{DB: h.db}, jobs.DefaultConfig())
		worker.Sweep(t.Context())
		for _, id := range ids {
			if j := h.job(id); j.Outcome != jobs.Failed || j.ErrorCode != "request_timeout" || j.Charged != 0 {
				t.Fatalf("hand-off past its wait: %+v", j)
			}
		}
		if got := h.balance(); got != before {
			t.Fatalf("balance %d, want %d: every hand-off refunded", got, before)
		}
	})
}
