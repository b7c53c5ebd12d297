package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/server"
)

// TestI26_ChatTurnHandedOff: a chat turn asked of a process without the worker role (the
// front processes behind a load balancer) is handed off like any job and run by a worker
// process: the openai-shaped answer arrives, rather than request_timeout after 30 s because
// no worker looks at language models' hand-offs.
func TestI26_ChatTurnHandedOff(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		h.stopWorker() // the harness's own process plays no part
		var apiH http.Handler
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apiH.ServeHTTP(w, r) }))
		defer api.Close()
		apiRoles, _ := server.ParseRoles("api,queue,sync")
		workerRoles, _ := server.ParseRoles("worker")
		cfg := server.Config{PublicURLAPI: api.URL, PublicURLQueue: api.URL, PublicURLSync: api.URL, ReferenceModels: true}
		cfg.Roles = apiRoles
		front := h.newServer(cfg, nil, nil, nil)
		apiH = front.Handler(server.RoleAPI)
		cfg.Roles = workerRoles
		worker := h.newServer(cfg, nil, nil, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, 2)
		for _, s := range []*server.Server{front, worker} {
			go func() { _ = s.Jobs().Run(ctx); done <- struct{}{} }()
		}
		defer func() { cancel(); <-done; <-done }()

		r := h.call(http.MethodPost, api.URL+"/compat/v1/chat/completions",
			`{"model":"qwen","messages":[{"role":"user","content":"Name a colour."}],"max_tokens":50}`)
		if r.Code != http.StatusOK || r.str("object") != "chat.completion" {
			t.Fatalf("chat turn through a front process: %d %s", r.Code, r.Raw)
		}
		choices, _ := r.Body["choices"].([]any)
		if len(choices) != 1 || !strings.Contains(r.Raw, "reference model") {
			t.Fatalf("chat turn's answer: %s", r.Raw)
		}
	})
}
