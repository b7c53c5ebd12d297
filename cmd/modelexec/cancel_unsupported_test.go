package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/server"
)

// oldCog is a Cog model server of a version without a cancel route: it is ready, takes every
// prediction (sending its id on started) and keeps it processing; POST …/cancel is not found.
func oldCog(t *testing.T, started chan<- string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health-check", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"status":"READY"}`)
	})
	processing := func(w http.ResponseWriter, r *http.Request, code int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id"), "status": "processing"})
	}
	mux.HandleFunc("PUT /predictions/{id}", func(w http.ResponseWriter, r *http.Request) {
		processing(w, r, http.StatusAccepted)
		select {
		case started <- r.PathValue("id"):
		default:
		}
	})
	mux.HandleFunc("GET /predictions/{id}", func(w http.ResponseWriter, r *http.Request) { processing(w, r, http.StatusOK) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestREAD09_CancelUnsupportedFromServe proves READ-09's cancel_unsupported reachable from
// serve's own configuration: with `--cog image-4b=URL --cog-no-cancel image-4b`, a cancel of
// a running image-4b job answers 400 cancel_unsupported carrying product and the job keeps
// running; --cog-no-cancel of a model with no Cog server is refused at start.
func TestREAD09_CancelUnsupportedFromServe(t *testing.T) {
	started := make(chan string, 1)
	cogSrv := oldCog(t, started)
	c := &ServeCmd{Roles: "api,queue,sync,worker", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0",
		Cog: map[string]string{"image-4b": cogSrv.URL}, CogNoCancel: []string{"image-lite"}}
	c.Data, c.Secret = migratedData(t), "cancel-unsupported-secret-0123"
	if _, err := serveWith(t, c); err == nil || !strings.Contains(err.Error(), "--cog-no-cancel image-lite") {
		t.Fatalf("--cog-no-cancel of a model without --cog: %v", err)
	}
	c.CogNoCancel, c.Data = []string{"image-4b"}, migratedData(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := c.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc, err := c.authService(db, false, slog.New(slog.DiscardHandler), utcNow)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := c.buildWith(ctx, db, svc, slog.New(slog.DiscardHandler), lowCost)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- srv.RunWorkers(ctx) }()
	defer func() { cancel(); <-done }()
	if err := db.CreateAccount(ctx, auth.Account{ID: "acct_c", Plan: auth.Pro, Status: auth.Live, Balance: 1000,
		AllowancePeriod: "9999-12", CreatedAt: utcNow().Add(-72 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	m, err := svc.Mint(ctx, auth.MintParams{AccountID: "acct_c"})
	if err != nil {
		t.Fatal(err)
	}
	queue := srv.Handler(server.RoleQueue)
	call := func(method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+m.Key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		queue.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	code, sub := call("POST", "/svc-serverless/image-4b", `{"positivePrompt":"a fox"}`)
	if code != http.StatusOK {
		t.Fatalf("submit: %d %v", code, sub)
	}
	id, _ := sub["request_id"].(string)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job never reached the Cog server")
	}
	if _, st := call("GET", "/svc-serverless/image-4b/requests/"+id+"/status", ""); st["status"] != "IN_PROGRESS" {
		t.Fatalf("a job on the Cog server: %v", st)
	}
	code, body := call("PUT", "/svc-serverless/image-4b/requests/"+id+"/cancel", "")
	if code != http.StatusBadRequest || body["error"] != "cancel_unsupported" || body["product"] == nil {
		t.Fatalf("cancel of a running job on a Cog server without cancel: %d %v", code, body)
	}
	if _, st := call("GET", "/svc-serverless/image-4b/requests/"+id+"/status", ""); st["status"] != "IN_PROGRESS" {
		t.Fatalf("after the refused cancel: %v", st)
	}
}
