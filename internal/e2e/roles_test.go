package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/plans"
)

// TestI10_RolesSplit runs the real binary twice on one database (PostgreSQL, then SQLite), as the README's
// scale-out section says: one process with --roles api,queue,sync (it never runs a job) and
// one with --roles worker,webhooks. 500 jobs go through the API process's queue host; each
// runs exactly once in the worker (attempts 1, no lease taken over, one event, charged once),
// and a job whose input is a file uploaded through the API process's signed link runs in the
// worker, which recognises the link as the deployment's own. Proves issue 10 items 4 and 5.
func TestI10_RolesSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("the roles split test builds and starts the binary")
	}
	bin := filepath.Join(t.TempDir(), "modelexec")
	build := exec.Command("go", "build", "-o", bin, "github.com/modelexec/modelexec/cmd/modelexec")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, backend := range []string{"postgres", "sqlite"} {
		t.Run(backend, func(t *testing.T) { rolesSplit(t, bin, backend) })
	}
}

// rolesSplit is TestI10_RolesSplit on one database: on SQLite the two processes share the
// database file, and the worker learns of hand-offs by looking for them (no notices).
func rolesSplit(t *testing.T, bin, backend string) {
	db, dsn := crashDB(t, backend)
	dir := t.TempDir()

	// The catalogue: image-4b run by the no-op runner, offering a queue.
	var f catalog.File
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		t.Fatal(err)
	}
	for i := range f.Models {
		if f.Models[i].Slug == "image-4b" {
			f.Models[i].Runner = "noop"
			f.Models[i].Lifecycle.Queue, f.Models[i].Lifecycle.MaxWaitSeconds = catalog.QueueOffers, 600
		}
	}
	catFile := filepath.Join(dir, "catalogue.json")
	writeJSON(t, catFile, f)
	// The plans: room for 500 jobs in flight and no pacing in the way of the test.
	p := plans.Default().Unpaced(auth.Pro, 1000, 100000)
	plansFile := filepath.Join(dir, "plans.json")
	if err := os.WriteFile(plansFile, p.JSON(), 0o600); err != nil {
		t.Fatal(err)
	}

	h := &harness{t: t, db: db, clock: &clock{}}
	h.auth = auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), h.clock.Now, quietLog())
	h.account, h.key = h.newAccount("acct_roles", auth.Pro, 1_000_000, nil)

	api, queue, syncAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	common := []string{"serve", "--database", dsn, "--data", filepath.Join(dir, "data"), "--secret", secret,
		"--api-addr", api, "--queue-addr", queue, "--sync-addr", syncAddr,
		"--public-url-api", "http://" + api, "--public-url-queue", "http://" + queue, "--public-url-sync", "http://" + syncAddr,
		"--catalogue", catFile, "--plans", plansFile, "--log-level", "debug"}
	apiLog := startServe(t, bin, append(common, "--roles", "api,queue,sync"))
	waitHealthy(t, "http://"+queue+"/healthz")
	waitHealthy(t, "http://"+api+"/healthz")

	// Before any worker exists: the API process charges the job and leaves it queued for a
	// worker, under no lease; the worker started next picks it up without charging again.
	first, err := post("http://"+queue+"/svc-serverless/image-4b", h.key, `{"positivePrompt":"before the worker"}`)
	if err != nil || first.code != http.StatusOK || first.body["status"] != "IN_QUEUE" {
		t.Fatalf("submit before the worker: %v %d %s", err, first.code, first.raw)
	}
	firstID, _ := first.body["request_id"].(string)
	// A process that runs jobs starts a submit to an idle model in the submit's own
	// transaction (IN_PROGRESS under its lease): IN_QUEUE here is the hand-off.
	if j := h.job(firstID); j.Status != jobs.InQueue || j.LeaseOwner != "" || j.Reserved != j.Quoted || j.Attempts != 0 {
		t.Fatalf("API-only process: job %+v, want IN_QUEUE, charged, under no lease", j)
	}
	workerLog := startServe(t, bin, append(common, "--roles", "worker,webhooks"))

	const n, clients = 500, 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += clients {
				res, err := post("http://"+queue+"/svc-serverless/image-4b", h.key, fmt.Sprintf(`{"positivePrompt":"split %d"}`, i))
				if err != nil || res.code != http.StatusOK {
					errs <- fmt.Sprintf("submit %d: %v %d %s", i, err, res.code, res.raw)
					continue
				}
				ids[i], _ = res.body["request_id"].(string)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}

	// A file uploaded through the API process, the input of a job the worker runs.
	src := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for y := range 8 {
		for x := range 8 {
			src.Set(x, y, color.NRGBA{R: 200, A: 255})
		}
	}
	ref := uploadTo(t, h, "http://"+api, "image/png", encodePNG(t, src))
	up, err := post("http://"+queue+"/svc-serverless/upscale", h.key, fmt.Sprintf(`{"upscaleFactor":2,"outputFormat":"PNG","inputs":{"image":%q}}`, ref))
	if err != nil || up.code != http.StatusOK {
		t.Fatalf("upscale submit: %v %d %s", err, up.code, up.raw)
	}
	upID, _ := up.body["request_id"].(string)

	deadline := time.Now().Add(120 * time.Second)
	for {
		var done int
		if err := db.SQL().QueryRow(`SELECT count(*) FROM jobs WHERE status = 'COMPLETED'`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done == n+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs settled\napi log:\n%s\nworker log:\n%s", done, n+2, tail(apiLog), tail(workerLog))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, id := range append(ids, upID, firstID) {
		j := h.job(id)
		if j.Outcome != jobs.Succeeded || j.Attempts != 1 {
			t.Errorf("job %s: outcome %s (%s %s), attempts %d: want SUCCEEDED once", id, j.Outcome, j.ErrorCode, j.ErrorMessage, j.Attempts)
		}
	}
	if s := apiLog.String(); strings.Contains(s, "job taken over") {
		t.Errorf("the API-only process took over a job:\n%s", tail(apiLog))
	}
	if s := workerLog.String(); strings.Contains(s, "job taken over") {
		t.Errorf("a lease was lost while running (the worker took a job over):\n%s", tail(workerLog))
	}
	checkBooks(t, db)
}

// safeBuffer is a process's log, written by the process's output copier and read by the test.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(b *safeBuffer) string {
	s := b.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// startServe starts the binary with args and stops it (SIGTERM, then kill) at cleanup.
func startServe(t *testing.T, bin string, args []string) *safeBuffer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out := &safeBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealthy(t *testing.T, u string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer", u)
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

type postResult struct {
	code int
	body map[string]any
	raw  string
}

// post sends a JSON body with the key; safe from many goroutines (no t.Fatal).
func post(u, key, body string) (postResult, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return postResult{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return postResult{}, err
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	out := postResult{code: res.StatusCode, raw: b.String()}
	_ = json.Unmarshal(b.Bytes(), &out.body)
	return out, nil
}

// uploadTo sends data through apiBase's POST /v1/uploads and the signed PUT; it returns the
// read URL.
func uploadTo(t *testing.T, h *harness, apiBase, contentType string, data []byte) string {
	t.Helper()
	m := &modelsHarness{harness: h}
	r := m.call(http.MethodPost, apiBase+"/v1/uploads", fmt.Sprintf(`{"content_type":%q,"product":"photo"}`, contentType))
	if r.Code != http.StatusCreated || r.str("upload_url") == "" || r.str("read_url") == "" {
		t.Fatalf("POST /v1/uploads: %d %s", r.Code, r.Raw)
	}
	req, err := http.NewRequest(r.str("method"), r.str("upload_url"), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := r.Body["headers"].(map[string]any)
	for k, v := range hdr {
		req.Header.Set(k, fmt.Sprint(v))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("PUT upload: %d", res.StatusCode)
	}
	return r.str("read_url")
}
