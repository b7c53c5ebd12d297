package accountapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file tests the jobs, assets, usage and upload routes over HTTP, wired the way
// cmd/modelexec/serve.go build() wires them, on SQLite and PostgreSQL. Names are prefixed acc*
// so they stay apart from e2e_test.go's helpers.

// accClock is a clock the test moves by hand.
type accClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *accClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *accClock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *accClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// admission is one call the recording pacer saw.
type admission struct {
	Key    string
	Bucket ratelimit.Bucket
	Cost   int64
}

// recPacer admits everything (unless refuse names a bucket) and records each keyed admission.
// Each bucket answers its own Limit so the headers tell which admission set them.
type recPacer struct {
	mu     sync.Mutex
	calls  []admission
	refuse ratelimit.Bucket
}

func (*recPacer) NoCapacity(string, ratelimit.Bucket) bool { return false }

func (p *recPacer) Fuse(string, ratelimit.Bucket, time.Time) (ratelimit.Decision, bool) {
	return ratelimit.Decision{}, true
}

func (p *recPacer) Admit(_ context.Context, r ratelimit.Request) (ratelimit.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := map[ratelimit.Bucket]int64{ratelimit.Read: 60, ratelimit.Write: 20, ratelimit.Egress: 5000}[r.Bucket]
	if strings.HasPrefix(r.Key, "addr:") {
		return ratelimit.Decision{Allowed: true, Limit: limit, Remaining: limit - 1}, nil
	}
	p.calls = append(p.calls, admission{r.Key, r.Bucket, r.Cost})
	if r.Bucket == p.refuse {
		return ratelimit.Decision{Refusal: ratelimit.BucketSpent, Limit: limit, RetryAfter: 3 * time.Second, ResetAfter: time.Minute}, nil
	}
	return ratelimit.Decision{Allowed: true, Limit: limit, Remaining: limit - r.Cost, ResetAfter: time.Second}, nil
}

func (p *recPacer) setRefuse(b ratelimit.Bucket) { p.mu.Lock(); p.refuse = b; p.mu.Unlock() }

func (p *recPacer) take() []admission {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	p.calls = nil
	return c
}

// fakeRunner stands in for image-lite: its prompt says what it does. "block ..." waits until
// released; "fail ..." fails (refunded); "bytes=N ..." writes an N-byte file; anything else
// writes a 1000-byte file.
type fakeRunner struct {
	release chan struct{}
}

func (f *fakeRunner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var in struct {
		Prompt string `json:"positivePrompt"`
	}
	_ = json.Unmarshal(job.Input, &in)
	if strings.HasPrefix(in.Prompt, "block") {
		select {
		case <-f.release:
		case <-ctx.Done():
			return runners.Result{}, ctx.Err()
		}
	}
	if strings.HasPrefix(in.Prompt, "fail") {
		return runners.Result{}, &runners.Failure{Code: "runner_failed", Message: "asked to fail"}
	}
	n := 1000
	if i := strings.Index(in.Prompt, "bytes="); i >= 0 {
		_, _ = fmt.Sscanf(in.Prompt[i:], "bytes=%d", &n)
	}
	key, err := env.Outputs.Put(ctx, "image-0.png", "image/png", bytes.Repeat([]byte{7}, n))
	if err != nil {
		return runners.Result{}, err
	}
	return runners.Result{
		Document: map[string]any{"images": []any{map[string]any{"storage_key": key, "content_type": "image/png"}}},
		Files:    []runners.File{{Key: key, ContentType: "image/png", Bytes: int64(n)}},
		Done:     1,
	}, nil
}

type accEnv struct {
	t      *testing.T
	db     *sqlstore.DB
	clock  *accClock
	pacer  *recPacer
	svc    *auth.Service
	jobs   *jobs.Service
	cat    *catalog.Catalog
	runner *fakeRunner
	srv    *httptest.Server
	usage  *ledger.Usage
}

// newAccEnv wires the account API like serve.go build(): catalogue, blob store and signer,
// fetcher, builtin runners (image-lite replaced by fakeRunner), jobs service, gate.
func newAccEnv(t *testing.T, db *sqlstore.DB) *accEnv { return newAccEnvConfig(t, db, nil) }

// newAccEnvConfig is newAccEnv with the server's configuration edited first (nil: as shipped).
func newAccEnvConfig(t *testing.T, db *sqlstore.DB, edit func(*server.Config)) *accEnv {
	e := &accEnv{t: t, db: db, clock: &accClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}, pacer: &recPacer{},
		runner: &fakeRunner{release: make(chan struct{})}}
	log := slog.New(slog.DiscardHandler)
	e.svc = auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("test-secret-0123456789abcdef"), e.clock.Now, log)
	var root http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { root.ServeHTTP(w, r) }))
	t.Cleanup(e.srv.Close)
	bucket := blobs.NewMemory()
	// The console's sign-in hashes at bcrypt's lowest cost (as internal/server's console tests
	// do): no test here signs in, and each server otherwise spends a second of race-detector CPU
	// on the hash its sign-in compares unknown emails against.
	cfg := server.Config{Roles: server.Every(), Secret: "blob-signing-secret-0123456789abcdef",
		PublicURLAPI: e.srv.URL, PublicURLQueue: "http://queue.test", PasswordCost: bcrypt.MinCost}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(context.Background(), cfg,
		server.Deps{DB: db, Auth: e.svc, Now: e.clock.Now, Log: log, Bucket: bucket, Pacer: e.pacer,
			Catalogue: func(catalog.Hosts) (*catalog.Catalog, error) { return catalog.Default() },
			Runners:   func(*catalog.Catalog) runners.Registry { return runners.Registry{"image-lite": e.runner} }})
	if err != nil {
		t.Fatal(err)
	}
	e.cat, e.jobs, e.usage = srv.Catalog(), srv.Jobs(), srv.Usage()
	t.Cleanup(func() {
		select {
		case <-e.runner.release:
		default:
			close(e.runner.release)
		}
		e.jobs.Drain()
	})
	root = srv.Handler(server.RoleAPI)
	return e
}

// account makes an account with credits and a key (default scopes unless given).
func (e *accEnv) account(id string, scopes ...auth.Scope) string {
	e.t.Helper()
	storetest.NewAccount(e.t, e.db, id, auth.Pro, 10000)
	p := auth.MintParams{AccountID: id}
	if scopes != nil {
		p.Scopes = scopes
	}
	m, err := e.svc.Mint(context.Background(), p)
	if err != nil {
		e.t.Fatal(err)
	}
	return m.Key
}

// submit runs one job through jobs.Service.Submit, as the queue host does.
func (e *accEnv) submit(key, slug, body, idem string) jobs.Job {
	e.t.Helper()
	ctx := context.Background()
	pk, err := e.svc.Parse(key)
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := e.svc.Authenticate(ctx, pk, false)
	if err != nil {
		e.t.Fatal(err)
	}
	m, ok := e.cat.Model(slug)
	if !ok {
		e.t.Fatalf("no model %s", slug)
	}
	res, err := e.jobs.Submit(ctx, jobs.SubmitRequest{Principal: &p, Model: m, Body: []byte(body), IdempotencyKey: idem})
	if err != nil {
		e.t.Fatalf("submit %s: %v", body, err)
	}
	return res.Job
}

// settle waits (in real time, bounded) for the job to settle.
func (e *accEnv) settle(j jobs.Job) jobs.Job {
	e.t.Helper()
	got, timedOut, err := e.jobs.Wait(context.Background(), j.AccountID, j.RequestID, 20*time.Second)
	if err != nil || timedOut {
		e.t.Fatalf("job %s did not settle: %v (timed out %v)", j.ID, err, timedOut)
	}
	return got
}

type accAnswer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (e *accEnv) call(method, url, key string, body []byte, hdr ...string) accAnswer {
	e.t.Helper()
	if strings.HasPrefix(url, "/") {
		url = e.srv.URL + url
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	given := map[string]bool{}
	for i := 0; i+1 < len(hdr); i += 2 {
		if given[hdr[i]] {
			req.Header.Add(hdr[i], hdr[i+1]) // a header named twice is sent on two lines
			continue
		}
		given[hdr[i]] = true
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := accAnswer{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func (e *accEnv) get(path, key string) accAnswer { return e.call("GET", path, key, nil) }

func (e *accEnv) want(a accAnswer, status int, code string) {
	e.t.Helper()
	if a.status != status || (code != "" && a.body["error"] != code) {
		e.t.Fatalf("got %d %s, want %d %s", a.status, a.raw, status, code)
	}
}

func items(a accAnswer) []map[string]any {
	d, _ := a.body["data"].([]any)
	out := make([]map[string]any, len(d))
	for i, v := range d {
		out[i], _ = v.(map[string]any)
	}
	return out
}

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

// TestACC07_ACC08_JobListPaging proves ACC-07 (GET /v1/jobs lists the account's jobs; limit 1
// to 100, else 400 invalid_limit carrying max) and ACC-08 (paging with before = next_before;
// a non-ISO 8601 before is 400 invalid_before), on SQLite and PostgreSQL.
func TestACC07_ACC08_JobListPaging(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_list")
		other := e.account("acct_other")
		otherJob := e.settle(e.submit(other, "image-lite", `{"positivePrompt":"other account"}`, "o1"))
		const n = 5
		var ids []string
		for i := range n {
			j := e.settle(e.submit(key, "image-lite", `{"positivePrompt":"job number `+fmt.Sprint(i)+`"}`, fmt.Sprintf("k%d", i)))
			ids = append([]string{j.ID}, ids...) // newest first
			e.clock.Add(1234 * time.Microsecond) // sub-second apart: paging must be exact
		}
		// Default page: all five, newest first, no more.
		a := e.get("/v1/jobs", key)
		e.want(a, 200, "")
		if a.body["object"] != "list" || a.body["has_more"] != false || a.body["next_before"] != nil || len(items(a)) != n {
			t.Fatalf("list = %s", a.raw)
		}
		for i, it := range items(a) {
			if it["id"] != ids[i] || it["object"] != "job" || it["status"] != "succeeded" {
				t.Fatalf("item %d = %v, want %s", i, it, ids[i])
			}
		}
		// Pages of two through next_before: every job once, in order.
		var seen []string
		path := "/v1/jobs?limit=2"
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatal("paging does not end")
			}
			a := e.get(path, key)
			e.want(a, 200, "")
			for _, it := range items(a) {
				seen = append(seen, it["id"].(string))
			}
			if a.body["has_more"] != true {
				break
			}
			nb, _ := a.body["next_before"].(string)
			last := items(a)[len(items(a))-1]
			if nb == "" || nb != last["created_at"] {
				t.Fatalf("next_before %q, last created_at %v", nb, last["created_at"])
			}
			path = "/v1/jobs?limit=2&before=" + nb
		}
		if strings.Join(seen, ",") != strings.Join(ids, ",") {
			t.Fatalf("paged %v, want %v", seen, ids)
		}
		// Limit edges.
		if a := e.get("/v1/jobs?limit=1", key); a.status != 200 || len(items(a)) != 1 || a.body["has_more"] != true {
			t.Fatalf("limit=1: %s", a.raw)
		}
		if a := e.get("/v1/jobs?limit=100", key); a.status != 200 || len(items(a)) != n {
			t.Fatalf("limit=100: %s", a.raw)
		}
		for _, bad := range []string{"0", "101", "-1", "ten", "2.5"} {
			a := e.get("/v1/jobs?limit="+bad, key)
			e.want(a, 400, "invalid_limit")
			if num(a.body["max"]) != 100 {
				t.Fatalf("invalid_limit lacks max 100: %s", a.raw)
			}
		}
		// before: ISO 8601 forms accepted, others refused.
		for _, ok := range []string{"2026-11-21T10:00:00Z", "2026-11-21T11:00:00%2B01:00", "2026-11-21T11:00:00+01:00", "2026-11-21"} {
			if a := e.get("/v1/jobs?before="+ok, key); a.status != 200 || len(items(a)) != 0 {
				t.Fatalf("before=%s: %s", ok, a.raw)
			}
		}
		if a := e.get("/v1/jobs?before=2026-12-01T00:00:00.5Z", key); a.status != 200 || len(items(a)) != n {
			t.Fatalf("future before: %s", a.raw)
		}
		for _, bad := range []string{"yesterday", "1700000000", "2026-13-01", "", "21/11/2026"} {
			e.want(e.get("/v1/jobs?before="+bad, key), 400, "invalid_before")
		}
		// A key without jobs:read cannot exist (always on), so the scope is shown through the
		// other account: it sees only its own job.
		if a := e.get("/v1/jobs", other); len(items(a)) != 1 || items(a)[0]["id"] != otherJob.ID {
			t.Fatalf("other account list = %s", a.raw)
		}
	})
}

// TestACC09_ACC10_JobRead proves ACC-09 (the job record with poll_after_seconds and coverage)
// and ACC-10 (another account's job and a missing job answer the same 404 not_found).
func TestACC09_ACC10_JobRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_read")
		other := e.account("acct_nosy")
		running := e.submit(key, "image-lite", `{"positivePrompt":"block until released"}`, "run1")
		a := e.get("/v1/jobs/"+running.ID, key)
		e.want(a, 200, "")
		if a.body["status"] != "running" || num(a.body["poll_after_seconds"]) != 1 || a.body["object"] != "job" {
			t.Fatalf("running record = %s", a.raw)
		}
		if _, ok := a.body["coverage"]; !ok {
			t.Fatalf("record lacks coverage: %s", a.raw)
		}
		close(e.runner.release)
		j := e.settle(running)
		a = e.get("/v1/jobs/"+j.ID, key)
		e.want(a, 200, "")
		for k, v := range map[string]any{"id": running.ID, "idempotency_key": "run1", "product": "photo", "status": "succeeded", "error_code": nil,
			"credits_charged": float64(j.Charged), "credits_reserved": float64(j.Reserved), "poll_after_seconds": float64(0), "coverage": nil} {
			if got, ok := a.body[k]; !ok || got != v {
				t.Fatalf("%s = %v, want %v (%s)", k, got, v, a.raw)
			}
		}
		if j.Charged <= 0 {
			t.Fatalf("the job charged nothing: %+v", j)
		}
		missing := e.get("/v1/jobs/photo_nope", key)
		e.want(missing, 404, "not_found")
		foreign := e.get("/v1/jobs/"+j.ID, other)
		e.want(foreign, 404, "not_found")
		if foreign.body["message"] != missing.body["message"] || len(foreign.body) != len(missing.body) {
			t.Fatalf("foreign %s differs from missing %s", foreign.raw, missing.raw)
		}
		e.want(e.get("/v1/jobs/"+j.ID+"/assets", other), 404, "not_found")
	})
}

// TestACC11_ACC12_ACC13_Assets proves ACC-11 (signed asset URLs valid 15 minutes), ACC-12
// (409 not_ready carrying status before a terminal status), ACC-13 (a refunded job's assets are
// 402 refunded) and spec 02 rate-limit rule 1 (read admission, then egress for the bytes; the
// headers are the egress admission's).
func TestACC11_ACC12_ACC13_Assets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_assets")
		const size = 2_500_000 // 2.5 MB: egress cost 3
		j := e.submit(key, "image-lite", fmt.Sprintf(`{"positivePrompt":"block bytes=%d"}`, size), "a1")
		a := e.get("/v1/jobs/"+j.ID+"/assets", key)
		e.want(a, 409, "not_ready")
		if a.body["status"] != "running" {
			t.Fatalf("not_ready status = %s", a.raw)
		}
		close(e.runner.release)
		e.settle(j)
		e.pacer.take()
		a = e.get("/v1/jobs/"+j.ID+"/assets", key)
		e.want(a, 200, "")
		calls := e.pacer.take()
		if len(calls) != 2 || calls[0].Bucket != ratelimit.Read || calls[0].Cost != 1 || calls[1].Bucket != ratelimit.Egress || calls[1].Cost != 3 {
			t.Fatalf("admissions = %+v, want read 1 then egress 3", calls)
		}
		if a.header.Get("RateLimit-Limit") != "5000" || a.header.Get("RateLimit-Remaining") != "4997" {
			t.Fatalf("headers are not the egress admission's: %v", a.header)
		}
		list := items(a)
		if a.body["object"] != "list" || len(list) != 1 || num(list[0]["bytes"]) != size || list[0]["content_type"] != "image/png" {
			t.Fatalf("assets = %s", a.raw)
		}
		exp, err := time.Parse(time.RFC3339, list[0]["expires_at"].(string))
		if err != nil || !exp.Equal(e.clock.Now().Add(15*time.Minute)) {
			t.Fatalf("expires_at %v, want now+15m", list[0]["expires_at"])
		}
		url := list[0]["url"].(string)
		got := e.call("GET", url, "", nil)
		if got.status != 200 || len(got.raw) != size {
			t.Fatalf("signed GET: %d, %d bytes", got.status, len(got.raw))
		}
		e.clock.Add(15*time.Minute + time.Second)
		if got := e.call("GET", url, "", nil); got.status == 200 {
			t.Fatal("the asset link still works after 15 minutes")
		}
		// An egress refusal answers 429 on the egress bucket.
		e.pacer.setRefuse(ratelimit.Egress)
		a = e.get("/v1/jobs/"+j.ID+"/assets", key)
		e.want(a, 429, "rate_limited")
		if a.body["bucket"] != "egress" {
			t.Fatalf("refused bucket = %s", a.raw)
		}
		e.pacer.setRefuse("")
		// A failed job is refunded: 402 refunded, and no egress is taken.
		f := e.settle(e.submit(key, "image-lite", `{"positivePrompt":"fail please"}`, "f1"))
		if f.Outcome != jobs.Failed || f.Charged != 0 {
			t.Fatalf("failed job = %+v", f)
		}
		e.pacer.take()
		e.want(e.get("/v1/jobs/"+f.ID+"/assets", key), 402, "refunded")
		// Every status the route answered here is one its OpenAPI operation lists.
		doc := e.get("/v1/openapi.json", "")
		responses := doc.body["paths"].(map[string]any)["/v1/jobs/{id}/assets"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)
		for _, status := range []string{"200", "402", "409", "429"} {
			if _, ok := responses[status]; !ok {
				t.Errorf("GET /v1/jobs/{id}/assets answers %s, which openapi.json does not list", status)
			}
		}
		if calls := e.pacer.take(); len(calls) != 1 || calls[0].Bucket != ratelimit.Read {
			t.Fatalf("refunded assets admitted %+v", calls)
		}
		e.want(e.get("/v1/jobs/photo_missing/assets", key), 404, "not_found")

		// A limited account may read the job but not download (account_limited, bucket egress).
		e.want(e.get("/v1/jobs/"+j.ID, key), 200, "") // warms the read cache
		if err := db.SetAccountStatus(context.Background(), "acct_assets", auth.Limited); err != nil {
			t.Fatal(err)
		}
		a = e.get("/v1/jobs/"+j.ID+"/assets", key)
		e.want(a, 403, "account_limited")
		if a.body["bucket"] != "egress" {
			t.Fatalf("account_limited bucket = %s", a.raw)
		}
		e.want(e.get("/v1/jobs/"+j.ID, key), 200, "")
		if err := db.SetAccountStatus(context.Background(), "acct_assets", auth.Live); err != nil {
			t.Fatal(err)
		}
		// A revoked key downloads nothing at once (KEY-25), even while reads may be cached.
		e.clock.Add(2 * time.Second)
		e.want(e.get("/v1/jobs/"+j.ID+"/assets", key), 200, "")
		pk, err := e.svc.Parse(key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Revoke(context.Background(), pk.ID); err != nil {
			t.Fatal(err)
		}
		e.want(e.get("/v1/jobs/"+j.ID+"/assets", key), 401, "key_revoked")
	})
}

// TestACC08_PagingAcrossTies proves ACC-08's paging is exact when jobs share a created_at
// microsecond across a page boundary: every job appears once, in order.
func TestACC08_PagingAcrossTies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_ties")
		// Times: one job, then three in one microsecond, then two in another.
		n := 0
		var want []string
		for _, group := range []int{1, 3, 2} {
			var ids []string
			for range group {
				ids = append(ids, e.settle(e.submit(key, "image-lite", `{"positivePrompt":"tied job"}`, fmt.Sprintf("t%d", n))).ID)
				n++
			}
			slices.Sort(ids)
			slices.Reverse(ids)
			want = append(ids, want...)
			e.clock.Add(time.Millisecond)
		}
		// Newest first; within a microsecond by id, descending.
		all := e.get("/v1/jobs", key)
		var ref []string
		for _, it := range items(all) {
			ref = append(ref, it["id"].(string))
		}
		if !slices.Equal(ref, want) {
			t.Fatalf("list = %v, want %v", ref, want)
		}
		for _, limit := range []int{1, 2, 3, 4} {
			var seen []string
			path := fmt.Sprintf("/v1/jobs?limit=%d", limit)
			for pages := 0; ; pages++ {
				if pages > 6 {
					t.Fatalf("limit %d: paging does not end", limit)
				}
				a := e.get(path, key)
				e.want(a, 200, "")
				if len(items(a)) > max(limit, 3) { // only the three-job microsecond may exceed limit
					t.Fatalf("limit %d: page of %d", limit, len(items(a)))
				}
				for _, it := range items(a) {
					seen = append(seen, it["id"].(string))
				}
				if a.body["has_more"] != true {
					break
				}
				path = fmt.Sprintf("/v1/jobs?limit=%d&before=%s", limit, a.body["next_before"])
			}
			if strings.Join(seen, ",") != strings.Join(ref, ",") {
				t.Fatalf("limit %d: paged %v, want %v", limit, seen, ref)
			}
		}
	})
}

// TestACC14_ACC15_Usage proves ACC-14 (GET /v1/usage: spend per key for month, last_month and
// 12m) and ACC-15 (a window too big to read is 413 usage_window_too_large carrying window).
func TestACC14_ACC15_Usage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key1 := e.account("acct_usage")
		m2, err := e.svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_usage"})
		if err != nil {
			t.Fatal(err)
		}
		key2 := m2.Key
		e.clock.Set(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)) // October
		oct := e.settle(e.submit(key1, "image-lite", `{"positivePrompt":"october job"}`, "u0"))
		e.clock.Set(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)) // November
		a1 := e.settle(e.submit(key1, "image-lite", `{"positivePrompt":"first"}`, "u1"))
		a2 := e.settle(e.submit(key1, "image-lite", `{"positivePrompt":"second"}`, "u2"))
		failed := e.settle(e.submit(key2, "image-lite", `{"positivePrompt":"fail this one"}`, "u3"))
		b1 := e.settle(e.submit(key2, "image-lite", `{"positivePrompt":"third"}`, "u4"))
		k1, k2 := a1.KeyID, b1.KeyID
		a := e.get("/v1/usage", key1)
		e.want(a, 200, "")
		if a.body["object"] != "usage" || a.body["window"] != "month" || a.body["from"] != "2026-11-01T00:00:00Z" {
			t.Fatalf("usage = %s", a.raw)
		}
		rows := map[string]map[string]any{}
		for _, it := range items(a) {
			rows[it["key_id"].(string)] = it
		}
		r1, r2 := rows[k1], rows[k2]
		if len(rows) != 2 || r1 == nil || r2 == nil {
			t.Fatalf("usage rows = %s", a.raw)
		}
		if num(r1["credits_charged"]) != a1.Charged+a2.Charged || num(r1["credits_refunded"]) != 0 || num(r1["jobs"]) != 2 ||
			num(r1["net"]) != a1.Charged+a2.Charged {
			t.Fatalf("key 1 row = %v", r1)
		}
		// key 2: the failed job was charged its reserve and refunded in full.
		if num(r2["credits_charged"]) != failed.Reserved+b1.Charged || num(r2["credits_refunded"]) != failed.Reserved ||
			num(r2["net"]) != b1.Charged || num(r2["jobs"]) != 2 {
			t.Fatalf("key 2 row = %v (failed %+v)", r2, failed)
		}
		total, _ := a.body["total"].(map[string]any)
		if num(total["net"]) != a1.Charged+a2.Charged+b1.Charged || num(total["jobs"]) != 4 {
			t.Fatalf("total = %v", total)
		}
		// last_month is October: the one October job.
		a = e.get("/v1/usage?window=last_month", key2)
		e.want(a, 200, "")
		if l := items(a); len(l) != 1 || l[0]["key_id"] != k1 || num(l[0]["net"]) != oct.Charged || a.body["to"] != "2026-11-01T00:00:00Z" {
			t.Fatalf("last_month = %s", a.raw)
		}
		// 12m covers both months.
		a = e.get("/v1/usage?window=12m", key1)
		e.want(a, 200, "")
		total, _ = a.body["total"].(map[string]any)
		if num(total["net"]) != oct.Charged+a1.Charged+a2.Charged+b1.Charged || a.body["from"] != "2025-12-01T00:00:00Z" {
			t.Fatalf("12m = %s", a.raw)
		}
		// Another account sees none of it.
		other := e.account("acct_quiet")
		if a := e.get("/v1/usage", other); a.status != 200 || len(items(a)) != 0 || num(a.body["total"].(map[string]any)["net"]) != 0 {
			t.Fatalf("other account usage = %s", a.raw)
		}
		for _, w := range []string{"13m", "24m"} {
			a := e.get("/v1/usage?window="+w, key1)
			e.want(a, 413, "usage_window_too_large")
			if a.body["window"] != w {
				t.Fatalf("window not carried: %s", a.raw)
			}
		}
	})
}

func pngBytes(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 30), uint8(y * 30), 128, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestACC16_ACC17_ACC18_Uploads proves ACC-16 (POST /v1/uploads takes the write scope of the
// target product and returns a signed PUT link and a path), ACC-17 (png, jpeg, webp only;
// others 400 unknown_content_type carrying accepted) and ACC-18 (the uploaded file's read URL
// is accepted as a model's url input: upscaled end to end).
func TestACC16_ACC17_ACC18_Uploads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_up")
		audio := e.account("acct_audio", auth.AudioWrite)
		post := func(key, body string) accAnswer {
			return e.call("POST", "/v1/uploads", key, []byte(body), "Content-Type", "application/json")
		}
		for _, ct := range []string{"image/png", "image/jpeg", "image/webp"} {
			a := post(key, `{"content_type":"`+ct+`","filename":"x"}`)
			e.want(a, 201, "")
			if a.body["object"] != "upload" || a.body["method"] != "PUT" || a.body["product"] != "photo" ||
				!strings.HasPrefix(a.body["path"].(string), "uploads/acct_up/") || !strings.Contains(a.body["upload_url"].(string), "/files/") {
				t.Fatalf("upload = %s", a.raw)
			}
		}
		e.pacer.take()
		for _, ct := range []string{"image/gif", "text/plain", ""} {
			a := post(key, `{"content_type":"`+ct+`"}`)
			e.want(a, 400, "unknown_content_type")
			acc, _ := a.body["accepted"].([]any)
			if len(acc) != 3 || acc[0] != "image/png" || acc[1] != "image/jpeg" || acc[2] != "image/webp" {
				t.Fatalf("accepted = %s", a.raw)
			}
		}
		if calls := e.pacer.take(); len(calls) != 3 || calls[0].Bucket != ratelimit.Write {
			t.Fatalf("uploads admitted %+v, want the write bucket", calls)
		}
		// Scope: the product's write scope. An audio-only key may upload for music, not photo.
		a := post(audio, `{"content_type":"image/png"}`)
		e.want(a, 403, "insufficient_scope")
		if a.body["required"] != "image:write" {
			t.Fatalf("scope refusal = %s", a.raw)
		}
		e.want(post(audio, `{"content_type":"image/png","product":"photo"}`), 403, "insufficient_scope")
		e.want(post(audio, `{"content_type":"image/png","product":"music"}`), 201, "")
		e.want(post(key, `{"content_type":"image/png","product":"cars"}`), 400, "unknown_product")
		e.want(post(key, `{"content_type":`), 400, "invalid_json")
		e.want(post(key, `[1]`), 400, "invalid_body")

		// Upload a real PNG, read it back, use it as an input.
		a = post(key, `{"content_type":"image/png","filename":"tiny.png"}`)
		e.want(a, 201, "")
		img := pngBytes(t, 8, 6)
		put := e.call("PUT", a.body["upload_url"].(string), "", img, "Content-Type", "image/png")
		if put.status/100 != 2 {
			t.Fatalf("PUT = %d %s", put.status, put.raw)
		}
		readURL := a.body["read_url"].(string)
		if got := e.call("GET", readURL, "", nil); got.status != 200 || !bytes.Equal(got.raw, img) {
			t.Fatalf("GET read_url = %d (%d bytes)", got.status, len(got.raw))
		}
		if got := e.call("PUT", a.body["upload_url"].(string), "", img, "Content-Type", "image/jpeg"); got.status/100 == 2 {
			t.Fatal("a PUT with another content type was accepted")
		}
		j := e.settle(e.submit(key, "upscale", `{"inputs":{"image":"`+readURL+`"},"upscaleFactor":2,"outputFormat":"PNG"}`, "up1"))
		if j.Outcome != jobs.Succeeded {
			t.Fatalf("upscale of the upload: %+v", j)
		}
		as := e.get("/v1/jobs/"+j.ID+"/assets", key)
		e.want(as, 200, "")
		if len(items(as)) == 0 {
			t.Fatalf("no assets: %s", as.raw)
		}
		out := e.call("GET", items(as)[0]["url"].(string), "", nil)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(out.raw))
		if err != nil || format != "png" || cfg.Width != 16 || cfg.Height != 12 {
			t.Fatalf("output %s %dx%d, %v", format, cfg.Width, cfg.Height, err)
		}
	})
}

// TestACC14_UsageWindowMalformed proves ACC-14's accepted windows from the refusing side: a
// window that is not a window at all ("bogus", "week", "0m", "all", "-1m", "m") is a 400 naming
// the windows accepted, not 413 usage_window_too_large (which is for a real window too big).
func TestACC14_UsageWindowMalformed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_usage_bad")
		for _, w := range []string{"bogus", "week", "0m", "all", "-1m", "m", "01m"} {
			a := e.get("/v1/usage?window="+url.QueryEscape(w), key)
			e.want(a, 400, "invalid_input")
			if a.body["window"] != w || a.body["error_type"] != "ValidationError" {
				t.Fatalf("window %q: %s", w, a.raw)
			}
			msg, _ := a.body["message"].(string)
			for _, name := range []string{"month", "last_month", "12m"} {
				if !strings.Contains(msg, name) {
					t.Fatalf("window %q: message %q does not name %s", w, msg, name)
				}
			}
			// allowed lists every window taken, 2m and 7m as well: a client builds its choices from it.
			if allowed, _ := a.body["allowed"].([]any); len(allowed) != 14 || allowed[0] != "month" || allowed[1] != "last_month" ||
				allowed[3] != "2m" || allowed[13] != "12m" {
				t.Fatalf("window %q: allowed = %v", w, a.body["allowed"])
			}
		}
	})
}
