package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/modelexec/modelexec/internal/metrics/metricstest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// flakyRunner succeeds, except for inputs whose prompt is "fail".
type flakyRunner struct{}

func (flakyRunner) Run(_ context.Context, j runners.Job, _ runners.Env) (runners.Result, error) {
	if strings.Contains(string(j.Input), `"fail"`) {
		return runners.Result{}, errors.New("the model broke")
	}
	return runners.Result{Document: map[string]any{"ok": true}, Done: 1}, nil
}

// spendPacer admits `generate` requests until `left` runs out, then refuses them
// bucket_spent; every other bucket is admitted.
type spendPacer struct{ left atomic.Int64 }

func (*spendPacer) NoCapacity(string, ratelimit.Bucket) bool { return false }

func (p *spendPacer) Fuse(string, ratelimit.Bucket, time.Time) (ratelimit.Decision, bool) {
	return ratelimit.Decision{}, true
}

func (p *spendPacer) Admit(_ context.Context, r ratelimit.Request) (ratelimit.Decision, error) {
	if r.Bucket == ratelimit.Generate && p.left.Add(-1) < 0 {
		return ratelimit.Decision{Refusal: ratelimit.BucketSpent, Limit: 3, RetryAfter: time.Second}, nil
	}
	return ratelimit.Decision{Allowed: true, Limit: 100, Remaining: 99}, nil
}

// syncLog is a log buffer safe for the server's goroutines.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// lines are the JSON log lines with message msg.
func (l *syncLog) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, raw := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// scrape reads the operator listener's /metrics with Prometheus's text parser.
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	return metricstest.Scrape(t, h)
}

// TestI14_MetricsWiredThroughServer: with an operator listener, jobs run over HTTP show up
// in /metrics as the domains report them (jobs by model and outcome with durations, credits
// charged and refunded by product, rate-limit refusals by bucket, requests by surface and
// status, queue depth and seats in use), and every request leaves one access line at info
// naming its route and the key's public id, never the key.
func TestI14_MetricsWiredThroughServer(t *testing.T) {
	db := storetest.OpenSQLite(t)
	logs := &syncLog{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), func() time.Time { return time.Now().UTC() }, slog.New(slog.DiscardHandler))
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	pacer := &spendPacer{}
	pacer.left.Store(3)
	srv, err := server.New(context.Background(), server.Config{Secret: secret, PublicURLSync: ts.URL, MetricsAddr: "127.0.0.1:0"},
		server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory(), Log: log, Pacer: pacer,
			Runners: func(*catalog.Catalog) runners.Registry { return runners.Registry{"image-4b": flakyRunner{}} }})
	if err != nil {
		t.Fatal(err)
	}
	h = srv.Handler(server.RoleSync)
	storetest.NewAccount(t, db, "acct_srv", auth.Pro, 100000)
	minted, err := as.Mint(context.Background(), auth.MintParams{AccountID: "acct_srv"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(prompt string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/svc-serverless/image-4b", strings.NewReader(`{"positivePrompt":"`+prompt+`"}`))
		req.Header.Set("Authorization", "Bearer "+minted.Key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode
	}
	for i, c := range []struct {
		prompt string
		want   int
	}{{"a cat", 200}, {"a dog", 200}, {"fail", 500}, {"a third", 429}} {
		if got := run(c.prompt); got != c.want {
			t.Fatalf("run %d (%q): %d, want %d", i, c.prompt, got, c.want)
		}
	}
	m, ok := srv.Catalog().Model("image-4b")
	if !ok {
		t.Fatal("no image-4b in the catalogue")
	}
	// A run's answer goes out when its settlement is committed; its slot is given back a
	// moment later, when its goroutine ends: the gauge is read once it has.
	got := scrape(t, srv.Handler(server.RoleOperator))
	for deadline := time.Now().Add(10 * time.Second); got[`modelexec_jobs_running{}`] != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		got = scrape(t, srv.Handler(server.RoleOperator))
	}
	for key, want := range map[string]float64{
		`modelexec_jobs_total{model=image-4b,outcome=succeeded}`:           2,
		`modelexec_jobs_total{model=image-4b,outcome=failed}`:              1,
		`modelexec_job_duration_seconds{model=image-4b,outcome=succeeded}`: 2,
		`modelexec_rate_limited_total{bucket=generate}`:                    1,
		`modelexec_queue_depth{}`:                                          0,
		`modelexec_seats_in_use{}`:                                         0,
		`modelexec_jobs_running{}`:                                         0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	if got[`modelexec_credits_charged_total{product=`+m.Product+`}`] <= 0 {
		t.Errorf("no credits charged for product %s: %v", m.Product, got)
	}
	if got[`modelexec_credits_refunded_total{product=`+m.Product+`}`] <= 0 {
		t.Errorf("the failed run's credits were not counted as refunded for product %s", m.Product)
	}
	if v := got[`modelexec_http_requests_total{route=/svc-serverless/image-4b,status=200,surface=sync}`]; v != 2 {
		t.Errorf("sync requests answered 200: %v", v)
	}
	if v := got[`modelexec_http_requests_total{route=/svc-serverless/image-4b,status=429,surface=sync}`]; v != 1 {
		t.Errorf("sync requests answered 429: %v", v)
	}

	access := logs.lines(t, "request")
	if len(access) != 4 {
		t.Fatalf("%d access lines at info, want 4:\n%s", len(access), logs)
	}
	for _, l := range access {
		if l["level"] != "INFO" || l["route"] != "POST /svc-serverless/{slug}" ||
			l["key_id"] != minted.Record.ID || l["request_id"] == "" || l["surface"] != "sync" || l["method"] != "POST" {
			t.Errorf("access line %v", l)
		}
	}
	if strings.Contains(logs.String(), minted.Key) {
		t.Fatal("the key reached the log")
	}
	settled := logs.lines(t, "job settled")
	if len(settled) != 3 {
		t.Fatalf("%d job lines, want 3:\n%s", len(settled), logs)
	}
	for _, l := range settled {
		if l["model"] != "image-4b" || l["account"] != "acct_srv" || l["duration_ms"] == nil || l["credits"] == nil {
			t.Errorf("job line %v", l)
		}
	}
}
