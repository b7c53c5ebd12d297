package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/server"
)

// TestCHAT11_LostCallRefundedNotRunAgain: language models' calls (a /compat/v1 chat
// completion sent without an idempotency key, a /v1/chat turn, a /compat/v1 embeddings call)
// in flight at their upstream when their process dies, the callers' connections cut with it,
// are not sent to the upstream again when another process takes their jobs over after the
// lease: no request waits for their answers. Each settles failed run_failed, refunded in full,
// read as such at GET /v1/jobs/{id}; the thread shows the failed turn; the embeddings job emits
// its one event (checkBooks). The upstream sees each call once.
func TestCHAT11_LostCallRefundedNotRunAgain(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		h.stopWorker() // the harness's own process plays no part
		var calls atomic.Int32
		var hold atomic.Bool
		hold.Store(true)
		arrived := make(chan string, 10)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			if hold.Load() { // the first process's calls: answered after the process is gone
				arrived <- r.URL.Path
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if strings.HasSuffix(r.URL.Path, "/embeddings") {
				vec := strings.TrimSuffix(strings.Repeat("0.0625,", 256), ",")
				fmt.Fprintf(w, `{"data":[{"index":0,"embedding":[%s]}],"usage":{"prompt_tokens":3}}`, vec)
				return
			}
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"late answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}}`)
		}))
		defer up.Close()

		var apiH http.Handler
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apiH.ServeHTTP(w, r) }))
		defer api.Close()
		cfg := server.Config{Roles: server.Every(), PublicURLAPI: api.URL, PublicURLQueue: h.queue.URL, PublicURLSync: h.sync.URL,
			OpenAIUpstream: []string{"qwen=" + up.URL + "/v1,name=m", "embed-small=" + up.URL + "/v1,name=e"}}
		first := h.newServer(cfg, nil, nil, nil)
		apiH = first.Handler(server.RoleAPI)
		workCtx, kill := context.WithCancel(context.Background())
		worked := make(chan struct{})
		go func() { defer close(worked); _ = first.Jobs().Run(workCtx) }()
		defer func() { kill(); <-worked; first.Jobs().Drain() }()

		conv := h.call(http.MethodPost, api.URL+"/v1/chat/conversations", `{"title":"lost"}`)
		if conv.Code != http.StatusCreated {
			t.Fatalf("open a conversation: %d %s", conv.Code, conv.Raw)
		}
		before := h.balance()

		// The callers' connections, cut when the process dies.
		callers, cut := context.WithCancel(context.Background())
		sent := make(chan int, 3)
		for _, c := range []struct{ path, body string }{
			{"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user","content":"x"}]}`},
			{"/v1/chat", `{"conversation_id":"` + conv.str("id") + `","model":"qwen","message":"hello"}`},
			{"/compat/v1/embeddings", `{"model":"embed-small","input":"a b c"}`},
		} {
			go func() {
				req, _ := http.NewRequestWithContext(callers, http.MethodPost, api.URL+c.path, strings.NewReader(c.body))
				req.Header.Set("Authorization", "Bearer "+h.key)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err == nil {
					raw, _ := io.ReadAll(res.Body)
					res.Body.Close()
					t.Errorf("%s answered %d %s before the process died", c.path, res.StatusCode, raw)
				}
				sent <- 1
			}()
		}
		for range 3 {
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("the calls did not reach the upstream")
			}
		}

		// The process dies: its callers' connections and its upstream calls end with it, its
		// runs settle nothing, and its leases run out.
		cut()
		for range 3 {
			<-sent
		}
		kill()
		<-worked
		hold.Store(false)
		jcfg := jobs.DefaultConfig()
		h.clock.Advance(jcfg.LeaseTTL + time.Second)

		next := h.newServer(cfg, nil, func(c *jobs.Config) { c.SweepEvery = 20 * time.Millisecond }, nil)
		nextCtx, stopNext := context.WithCancel(context.Background())
		nextDone := make(chan struct{})
		go func() { defer close(nextDone); _ = next.Jobs().Run(nextCtx) }()
		defer func() { stopNext(); <-nextDone; next.Jobs().Drain() }()

		rows, err := h.db.SQL().Query(`SELECT request_id FROM jobs`)
		if err != nil {
			t.Fatal(err)
		}
		var rids []string
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			rids = append(rids, id)
		}
		rows.Close()
		if len(rids) != 3 {
			t.Fatalf("%d jobs, want 3", len(rids))
		}
		for _, rid := range rids {
			j := h.waitSettled(rid)
			if j.Outcome != jobs.Failed || j.ErrorCode != "run_failed" || j.Charged != 0 || j.Attempts != 1 {
				t.Errorf("%s job after the takeover: %s %s charged %d attempts %d (%s)", j.Product, j.Outcome, j.ErrorCode, j.Charged, j.Attempts, j.ErrorMessage)
			}
			rec := h.call(http.MethodGet, api.URL+"/v1/jobs/"+j.ID, "")
			if rec.Code != http.StatusOK || rec.str("status") != "failed" || rec.str("error_code") != "run_failed" || rec.num("credits_charged") != 0 {
				t.Errorf("GET /v1/jobs/%s: %d %s", j.ID, rec.Code, rec.Raw)
			}
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("the upstream saw %d calls, want 3: a lost call was run again", n)
		}
		if b := h.balance(); b != before {
			t.Errorf("balance %d, want %d: every lost call refunded in full", b, before)
		}
		reader, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: h.account, Scopes: []auth.Scope{auth.ChatRead}})
		if err != nil {
			t.Fatal(err)
		}
		thread := h.callKey(reader.Key, http.MethodGet, api.URL+"/v1/chat/conversations/"+conv.str("id"), "")
		var body struct {
			Messages []struct{ Role, Status string } `json:"messages"`
		}
		_ = json.Unmarshal([]byte(thread.Raw), &body)
		if thread.Code != http.StatusOK || len(body.Messages) != 2 || body.Messages[1].Role != "assistant" || body.Messages[1].Status != "failed" {
			t.Errorf("the thread after the lost turn: %d %s", thread.Code, thread.Raw)
		}
	})
}
