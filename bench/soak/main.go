// Command soak holds one `modelexec serve` process under mixed traffic for a while and reports
// its memory. The process is the built binary, run as under --dev (SQLite, local files, the
// built-in runners and the reference language models) over a fresh data folder, with plan
// figures that do not pace the load and a catalogue whose image models offer a queue (a busy
// model then queues a submit rather than refusing it). -clients clients on loopback, spread
// over one account per 8 clients, each loop over a mix of:
//
//   - queue submits followed by status reads, the result and now and then its file;
//   - held submits (?wait), synchronous runs and status streams to the end;
//   - uploads (a slot, then a PUT of a PNG) and now and then a read of the uploaded file;
//   - chat turns (/v1/chat, streamed or not, and /compat/v1/chat/completions) and embeddings;
//   - account reads (/v1/me, /v1/jobs, /v1/usage, /v1/catalogue, a model's OpenAPI document);
//   - bad requests (a broken body, an unknown model, a wrong key, an input out of bounds).
//
// Every second it reads the server's resident set (VmRSS in /proc) and, from the operator
// listener (--metrics-addr), its Go heap in use and goroutines. It reports p50 and max of each,
// the peak (VmHWM), the GC settings the process runs with (GOGC, the soft memory limit), and
// requests a second by kind. -profile DIR writes the heap (in use and allocated), goroutine
// and a 10 s CPU profile taken at the end of the load, while it still runs.
//
// While it runs it keeps the file -marker (/tmp/soak-running), so that benchmarks timed on the
// same machine can wait for it. It is a benchmark, not a test: nothing here decides a pass.
//
//	go run ./bench/soak [-duration 10m] [-clients 64] [-profile DIR] [-serve-args '--memory-limit 0']
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/plans"
)

// clientsPerAccount keeps each account under its 12 held-connection seats: a client holds at
// most one connection at a time.
const clientsPerAccount = 8

func main() {
	duration := flag.Duration("duration", 2*time.Minute, "how long the load runs")
	clients := flag.Int("clients", 64, "clients sending at once")
	profile := flag.String("profile", "", "write heap, allocs, goroutine and CPU profiles taken at the end of the load into this folder")
	marker := flag.String("marker", "/tmp/soak-running", "file kept while the soak runs (empty: none)")
	serveArgs := flag.String("serve-args", "", "more flags for serve, space-separated (e.g. '--memory-limit 0')")
	flag.Parse()
	if *clients < 1 || *duration <= 0 {
		fail(errors.New("-clients and -duration must be positive"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *duration, *clients, *profile, *marker, strings.Fields(*serveArgs)); err != nil {
		fail(err)
	}
}

// server is the process under load and how to reach it.
type server struct {
	cmd                     *exec.Cmd
	api, queue, sync, admin string
	keys                    []string
	log                     string
}

func run(ctx context.Context, d time.Duration, clients int, profileDir, marker string, extra []string) error {
	dir, err := os.MkdirTemp("", "modelexec-soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := start(ctx, dir, (clients+clientsPerAccount-1)/clientsPerAccount, extra)
	if err != nil {
		return err
	}
	defer srv.stop()

	if marker != "" {
		if err := os.WriteFile(marker, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
		defer os.Remove(marker)
	}
	fmt.Printf("soak: %d clients over %d accounts for %s against pid %d\n", clients, len(srv.keys), d, srv.cmd.Process.Pid)

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	tr := &http.Transport{MaxIdleConns: 4 * clients, MaxIdleConnsPerHost: 2 * clients, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr, Timeout: 90 * time.Second}
	st := newStats()
	var wg sync.WaitGroup
	upload := noisePNG(1024, 768)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client{srv: srv, key: srv.keys[i/clientsPerAccount], hc: hc, st: st, rng: mrand.New(mrand.NewPCG(uint64(i), 7)), png: upload}
			c.loop(loadCtx)
		}()
	}
	began, cpuBefore := time.Now(), procCPU(srv.cmd.Process.Pid)
	samples := sample(ctx, srv, d)
	elapsed, cpu := time.Since(began), procCPU(srv.cmd.Process.Pid)-cpuBefore
	if profileDir != "" && ctx.Err() == nil {
		if err := writeProfiles(srv.admin, profileDir); err != nil {
			fmt.Fprintln(os.Stderr, "soak: profiles:", err)
		}
	}
	pid := srv.cmd.Process.Pid
	end := endReading{cpu: cpu, metrics: scrape(srv.admin), hwm: procStatus(pid, "VmHWM:"), anon: procStatus(pid, "RssAnon:"), file: procStatus(pid, "RssFile:")}
	stopLoad()
	wg.Wait()
	tr.CloseIdleConnections()
	report(samples, st, elapsed, end)
	return ctx.Err()
}

// start builds the binary, makes the accounts and their keys, and starts serve.
func start(ctx context.Context, dir string, accounts int, extra []string) (*server, error) {
	bin := filepath.Join(dir, "modelexec")
	build := exec.Command("go", "build", "-o", bin, "./cmd/modelexec")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	data := filepath.Join(dir, "data")
	env := append(os.Environ(), "MODELEXEC_DATA="+data, "MODELEXEC_SECRET="+randomHex(32))
	cli := func(args ...string) ([]byte, error) {
		c := exec.Command(bin, args...)
		c.Env, c.Stderr = env, os.Stderr
		out, err := c.Output()
		if err != nil {
			return nil, fmt.Errorf("modelexec %s: %w", args[0], err)
		}
		return out, nil
	}
	if _, err := cli("migrate"); err != nil {
		return nil, err
	}
	s := &server{api: freeAddr(), queue: freeAddr(), sync: freeAddr(), admin: freeAddr(), log: filepath.Join(dir, "serve.log")}
	scopes := "jobs:read,assets:read,image:write,text:write,embeddings:write,chat:read"
	for range accounts {
		var acct struct{ ID string }
		out, err := cli("accounts", "create", "--plan", "pro", "--credits", "1000000000", "--allowance", "1000000000", "--created-at", "2020-01-01T00:00:00Z", "--json")
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(out, &acct); err != nil {
			return nil, err
		}
		var key struct{ Key string }
		if out, err = cli("keys", "mint", "--account", acct.ID, "--scopes", scopes, "--json"); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(out, &key); err != nil {
			return nil, err
		}
		s.keys = append(s.keys, key.Key)
	}
	catFile, plansFile, err := writeFigures(dir)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--reference-models", "--catalogue", catFile, "--plans", plansFile, "--log-level", "warn",
		"--api-addr", s.api, "--queue-addr", s.queue, "--sync-addr", s.sync, "--metrics-addr", s.admin}, extra...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = env, logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	for _, u := range []string{"http://" + s.api + "/readyz", "http://" + s.queue + "/healthz", "http://" + s.admin + "/metrics"} {
		if err := waitHealthy(ctx, u); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// stop interrupts serve, waits for it, and shows the end of its log when it said anything.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	if b, err := os.ReadFile(s.log); err == nil && len(b) > 0 {
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		fmt.Fprintf(os.Stderr, "serve's log (last 4000 bytes):\n%s\n", b)
	}
}

// writeFigures writes plan figures that do not pace the load and a catalogue whose image models
// offer a queue.
func writeFigures(dir string) (string, string, error) {
	var f catalog.File
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		return "", "", err
	}
	for i := range f.Models {
		switch f.Models[i].Slug {
		case "image-4b", "image-turbo":
			f.Models[i].Lifecycle.Queue, f.Models[i].Lifecycle.MaxWaitSeconds = catalog.QueueOffers, 600
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", "", err
	}
	catFile := filepath.Join(dir, "catalogue.json")
	if err := os.WriteFile(catFile, b, 0o600); err != nil {
		return "", "", err
	}
	p := plans.Default().Unpaced(auth.Pro, 100000, 1000000)
	plansFile := filepath.Join(dir, "plans.json")
	return catFile, plansFile, os.WriteFile(plansFile, p.JSON(), 0o600)
}

// stats counts requests by kind and outcome.
type stats struct {
	mu     sync.Mutex
	counts map[string]*[4]int64 // 2xx-3xx, 4xx, 5xx, transport errors
	codes  map[string]int64     // refusals by kind, status and error code
	total  atomic.Int64
}

func newStats() *stats { return &stats{counts: map[string]*[4]int64{}, codes: map[string]int64{}} }

func (s *stats) refused(kind string, status int, code string) {
	s.mu.Lock()
	s.codes[fmt.Sprintf("%s %d %s", kind, status, code)]++
	s.mu.Unlock()
}

func (s *stats) add(kind string, status int, err error) {
	s.total.Add(1)
	i := 0
	switch {
	case err != nil:
		i = 3
	case status >= 500:
		i = 2
	case status >= 400:
		i = 1
	}
	s.mu.Lock()
	c := s.counts[kind]
	if c == nil {
		c = new([4]int64)
		s.counts[kind] = c
	}
	c[i]++
	s.mu.Unlock()
}

// client is one of the soak's clients: one account's key, its own random mix.
type client struct {
	srv  *server
	key  string
	hc   *http.Client
	st   *stats
	rng  *mrand.Rand
	png  []byte
	conv string // the chat conversation, renewed every 20 turns
	turn int
}

// mix is the share of each kind of work, in parts of 100.
var mix = []struct {
	weight int
	run    func(*client, context.Context)
}{
	{22, (*client).queued},
	{8, (*client).held},
	{8, (*client).synchronous},
	{10, (*client).streamed},
	{8, (*client).upload},
	{14, (*client).chat},
	{3, (*client).embeddings},
	{20, (*client).reads},
	{7, (*client).bad},
}

func (c *client) loop(ctx context.Context) {
	for ctx.Err() == nil {
		n := c.rng.IntN(100)
		for _, m := range mix {
			if n < m.weight {
				m.run(c, ctx)
				break
			}
			n -= m.weight
		}
	}
}

// do sends one request, counts it under kind, and answers its status and, when keep (or when
// refused: its error code is counted), its body; otherwise the body is read and dropped. A
// request the end of the load cut is not counted.
func (c *client) do(ctx context.Context, kind, method, url, key, ctype string, body []byte, keep bool) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		c.st.add(kind, 0, err)
		return 0, nil
	}
	if key != "" {
		req.Header.Set("Authorization", "Key "+key)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			c.st.add(kind, 0, err)
		}
		return 0, nil
	}
	defer res.Body.Close()
	var b []byte
	if keep || res.StatusCode >= 400 {
		b, err = io.ReadAll(res.Body)
	} else {
		_, err = io.Copy(io.Discard, res.Body)
	}
	if ctx.Err() != nil {
		return 0, nil // the load ended under this request: not counted
	}
	c.st.add(kind, res.StatusCode, err)
	if res.StatusCode >= 400 {
		var e struct{ Error any }
		_ = json.Unmarshal(b, &e)
		code, _ := e.Error.(string) // the compatibility surface's error is an object
		c.st.refused(kind, res.StatusCode, code)
	}
	return res.StatusCode, b
}

func (c *client) imageInput() (string, []byte) {
	slug := [...]string{"image-turbo", "image-4b"}[c.rng.IntN(2)]
	size := [...]int{512, 768, 1024}[c.rng.IntN(3)]
	return slug, fmt.Appendf(nil, `{"positivePrompt":"a lighthouse at dusk, %d","width":%d,"height":%d,"steps":4,"seed":%d}`,
		c.rng.IntN(1000), size, size, c.rng.IntN(1<<30))
}

type submitted struct {
	RequestID   string `json:"request_id"`
	Status      string `json:"status"`
	StatusURL   string `json:"status_url"`
	ResponseURL string `json:"response_url"`
}

func (c *client) submit(ctx context.Context, query string) (submitted, bool) {
	slug, in := c.imageInput()
	var s submitted
	code, b := c.do(ctx, "submit", http.MethodPost, "http://"+c.srv.queue+"/svc-serverless/"+slug+query, c.key, "application/json", in, true)
	return s, code == http.StatusOK && json.Unmarshal(b, &s) == nil && s.StatusURL != ""
}

// queued submits, reads the status until the job settles, then its result and, one time in
// three, its first file.
func (c *client) queued(ctx context.Context) {
	s, ok := c.submit(ctx, "")
	if !ok {
		return
	}
	for range 600 {
		code, b := c.do(ctx, "status", http.MethodGet, s.StatusURL, c.key, "", nil, true)
		if code != http.StatusOK {
			return
		}
		var st submitted
		if json.Unmarshal(b, &st) != nil || st.Status == "COMPLETED" {
			break
		}
		pause(ctx, 100*time.Millisecond)
	}
	code, b := c.do(ctx, "result", http.MethodGet, s.ResponseURL, c.key, "", nil, true)
	if code != http.StatusOK || c.rng.IntN(3) != 0 {
		return
	}
	var out struct {
		Images []struct{ URL string } `json:"images"`
	}
	if json.Unmarshal(b, &out) == nil && len(out.Images) > 0 {
		c.do(ctx, "file", http.MethodGet, out.Images[0].URL, "", "", nil, false)
	}
}

// held submits with ?wait: the connection is held until the job settles.
func (c *client) held(ctx context.Context) { c.submit(ctx, "?wait=30") }

func (c *client) synchronous(ctx context.Context) {
	slug, in := c.imageInput()
	c.do(ctx, "sync", http.MethodPost, "http://"+c.srv.sync+"/svc-serverless/"+slug, c.key, "application/json", in, false)
}

// streamed submits and follows the status stream (with logs) to its end.
func (c *client) streamed(ctx context.Context) {
	s, ok := c.submit(ctx, "")
	if !ok {
		return
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.StatusURL+"/stream?logs=1", nil)
	req.Header.Set("Authorization", "Key "+c.key)
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			c.st.add("stream", 0, err)
		}
		return
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("data: ")) && bytes.Contains(sc.Bytes(), []byte(`"COMPLETED"`)) {
			break
		}
	}
	if ctx.Err() == nil {
		c.st.add("stream", res.StatusCode, sc.Err())
	}
}

// upload takes a slot, PUTs a PNG to it and, one time in two, reads the file back.
func (c *client) upload(ctx context.Context) {
	code, b := c.do(ctx, "upload slot", http.MethodPost, "http://"+c.srv.api+"/v1/uploads", c.key, "application/json", []byte(`{"content_type":"image/png"}`), true)
	var slot struct {
		UploadURL string `json:"upload_url"`
		ReadURL   string `json:"read_url"`
	}
	if code != http.StatusOK && code != http.StatusCreated || json.Unmarshal(b, &slot) != nil {
		return
	}
	if code, _ := c.do(ctx, "upload put", http.MethodPut, slot.UploadURL, "", "image/png", c.png, false); code/100 == 2 && c.rng.IntN(2) == 0 {
		c.do(ctx, "file", http.MethodGet, slot.ReadURL, "", "", nil, false)
	}
}

// chat sends one turn: on /v1/chat in the client's conversation (streamed one time in two) or
// on /compat/v1/chat/completions.
func (c *client) chat(ctx context.Context) {
	api := "http://" + c.srv.api
	if c.rng.IntN(3) == 0 {
		body := fmt.Appendf(nil, `{"model":"qwen","messages":[{"role":"user","content":"Tell me about lighthouses, %d"}],"max_tokens":64}`, c.rng.IntN(1000))
		c.do(ctx, "compat chat", http.MethodPost, api+"/compat/v1/chat/completions", c.key, "application/json", body, false)
		return
	}
	if c.conv == "" || c.turn >= 20 {
		code, b := c.do(ctx, "conversation", http.MethodPost, api+"/v1/chat/conversations", c.key, "application/json", []byte(`{"title":"soak"}`), true)
		var conv struct{ ID string }
		if code/100 != 2 || json.Unmarshal(b, &conv) != nil {
			return
		}
		c.conv, c.turn = conv.ID, 0
	}
	c.turn++
	body := fmt.Appendf(nil, `{"conversation_id":%q,"message":"What should I pack for a week by the sea? %d","max_tokens":96,"stream":%t}`,
		c.conv, c.rng.IntN(1000), c.rng.IntN(2) == 0)
	c.do(ctx, "chat", http.MethodPost, api+"/v1/chat", c.key, "application/json", body, false)
}

func (c *client) embeddings(ctx context.Context) {
	c.do(ctx, "embeddings", http.MethodPost, "http://"+c.srv.api+"/v1/embeddings", c.key, "application/json",
		[]byte(`{"model":"embed-small","input":["a red fox in the snow","a lighthouse at dusk"]}`), false)
}

func (c *client) reads(ctx context.Context) {
	path := [...]string{"/v1/me", "/v1/jobs?limit=20", "/v1/usage?window=month", "/v1/catalogue",
		"/v1/models/svc-serverless/image-4b/openapi.json", "/v1/chat/conversations"}[c.rng.IntN(6)]
	c.do(ctx, "read", http.MethodGet, "http://"+c.srv.api+path, c.key, "", nil, false)
}

// bad sends a request the service refuses: a broken body, an unknown model, a wrong key, an
// input out of bounds, a status read of an unknown request.
func (c *client) bad(ctx context.Context) {
	q := "http://" + c.srv.queue + "/svc-serverless/"
	switch c.rng.IntN(5) {
	case 0:
		c.do(ctx, "bad", http.MethodPost, q+"image-4b", c.key, "application/json", []byte(`{"positivePrompt":`), false)
	case 1:
		c.do(ctx, "bad", http.MethodPost, q+"no-such-model", c.key, "application/json", []byte(`{}`), false)
	case 2:
		c.do(ctx, "bad", http.MethodGet, "http://"+c.srv.api+"/v1/me", "svc_sk_notakey", "", nil, false)
	case 3:
		c.do(ctx, "bad", http.MethodPost, q+"image-4b", c.key, "application/json", []byte(`{"positivePrompt":"x","width":100000}`), false)
	default:
		c.do(ctx, "bad", http.MethodGet, q+"image-4b/requests/00000000-0000-0000-0000-000000000000/status", c.key, "", nil, false)
	}
}

// sample is one second's reading of the server.
type sampleRow struct{ rss, heap, goroutines float64 }

// sample reads the server every second for d (or until ctx ends).
func sample(ctx context.Context, s *server, d time.Duration) []sampleRow {
	var rows []sampleRow
	t := time.NewTicker(time.Second)
	defer t.Stop()
	end := time.After(d)
	for {
		select {
		case <-ctx.Done():
			return rows
		case <-end:
			return rows
		case <-t.C:
			m := scrape(s.admin)
			rows = append(rows, sampleRow{rss: procStatus(s.cmd.Process.Pid, "VmRSS:"), heap: m["go_memstats_heap_inuse_bytes"], goroutines: m["go_goroutines"]})
		}
	}
}

// procStatus reads one line of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// procCPU reads the user and system CPU time a process has spent, from /proc/<pid>/stat.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: utime and stime are the 12th and
	// 13th, in clock ticks (100 a second on Linux).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// scrape reads the unlabelled series of the operator listener's /metrics.
func scrape(admin string) map[string]float64 {
	out := map[string]float64{}
	res, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return out
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

func writeProfiles(admin, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for file, path := range map[string]string{
		"heap.pb.gz": "/debug/pprof/heap?gc=1", "allocs.pb.gz": "/debug/pprof/allocs",
		"goroutine.txt": "/debug/pprof/goroutine?debug=1", "cpu.pb.gz": "/debug/pprof/profile?seconds=10",
	} {
		res, err := http.Get("http://" + admin + path)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("profiles in %s (go tool pprof -sample_index=inuse_space %s)\n", dir, filepath.Join(dir, "heap.pb.gz"))
	return nil
}

// endReading is the server read at the end of the load, while it still runs: the CPU time
// it spent during the load, its series and its peak, anonymous and file-backed resident
// memory.
type endReading struct {
	cpu             time.Duration
	metrics         map[string]float64
	hwm, anon, file float64
}

func report(rows []sampleRow, st *stats, elapsed time.Duration, end endReading) {
	mib := func(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
	col := func(f func(sampleRow) float64) (p50, max float64) {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = f(r)
		}
		if len(v) == 0 {
			return 0, 0
		}
		slices.Sort(v)
		return v[len(v)/2], v[len(v)-1]
	}
	rss50, rssMax := col(func(r sampleRow) float64 { return r.rss })
	heap50, heapMax := col(func(r sampleRow) float64 { return r.heap })
	_, gMax := col(func(r sampleRow) float64 { return r.goroutines })
	fmt.Printf("\n%d samples over %s\n", len(rows), elapsed.Round(time.Second))
	m := end.metrics
	fmt.Printf("RSS          p50 %s, max %s (peak VmHWM %s); at the end %s anonymous, %s file-backed\n",
		mib(rss50), mib(rssMax), mib(end.hwm), mib(end.anon), mib(end.file))
	fmt.Printf("Go heap      in use p50 %s, max %s; goroutines max %.0f\n", mib(heap50), mib(heapMax), gMax)
	// What the Go runtime holds of the anonymous memory; the rest is outside it (SQLite's
	// allocator among others).
	held := m["go_memstats_sys_bytes"] - m["go_memstats_heap_released_bytes"]
	fmt.Printf("at the end   Go heap in use %s, free not returned %s, stacks %s, runtime's own %s; outside Go about %s\n",
		mib(m["go_memstats_heap_inuse_bytes"]), mib(m["go_memstats_heap_idle_bytes"]-m["go_memstats_heap_released_bytes"]),
		mib(m["go_memstats_stack_sys_bytes"]), mib(m["go_memstats_sys_bytes"]-m["go_memstats_heap_sys_bytes"]-m["go_memstats_stack_sys_bytes"]),
		mib(max(end.anon-held, 0)))
	limit := "off"
	if l := m["go_gc_gomemlimit_bytes"]; l > 0 && l < 1<<62 {
		limit = mib(l)
	}
	fmt.Printf("GC           GOGC %.0f, soft memory limit %s, %0.f cycles\n", m["go_gc_gogc_percent"], limit, m["go_gc_duration_seconds_count"])
	n := st.total.Load()
	fmt.Printf("requests     %d, %.1f a second; the server's CPU %.1f ms a request\n\n", n, float64(n)/elapsed.Seconds(),
		float64(end.cpu)/float64(time.Millisecond)/float64(max(n, 1)))
	fmt.Printf("%-14s %9s %9s %7s %7s %7s\n", "kind", "per s", "2xx/3xx", "4xx", "5xx", "failed")
	kinds := make([]string, 0, len(st.counts))
	for k := range st.counts {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		c := st.counts[k]
		fmt.Printf("%-14s %9.1f %9d %7d %7d %7d\n", k, float64(c[0]+c[1]+c[2]+c[3])/elapsed.Seconds(), c[0], c[1], c[2], c[3])
	}
	refusals := make([]string, 0, len(st.codes))
	for k := range st.codes {
		refusals = append(refusals, k)
	}
	slices.Sort(refusals)
	fmt.Println("\nrefusals (kind, status, code):")
	for _, k := range refusals {
		fmt.Printf("  %-44s %7d\n", k, st.codes[k])
	}
}

// noisePNG is an upload: a PNG of random pixels, which compresses to about its raw size.
func noisePNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	_, _ = rand.Read(img.Pix)
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 0xff
	}
	img.Set(0, 0, color.NRGBA{A: 0xff})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		fail(err)
	}
	return b.Bytes()
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func waitHealthy(ctx context.Context, u string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		pause(ctx, 50*time.Millisecond)
	}
	return fmt.Errorf("%s not healthy within 60 s", u)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(1)
}
