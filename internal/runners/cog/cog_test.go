package cog_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/runners/cog"
)

// fakeCog reproduces the Cog HTTP prediction API: /health-check, PUT /predictions/{id}
// (Prefer: respond-async, webhook), GET /predictions/{id}, POST /predictions/{id}/cancel.
type fakeCog struct {
	t  *testing.T
	mu sync.Mutex

	health    string // READY, BUSY, STARTING, ...
	down      bool   // drop every connection (server gone)
	mode      string // "ok", "fail", "busy", "refuse", "hold", "url", "falshape"
	webhooks  bool   // send webhooks (else the runner must poll)
	preds     map[string]map[string]any
	puts      int
	cancelled []string
	prefer    []string
	fileURL   string
	hooked    chan string
	holdLogs  string // logs of a held prediction
}

func newFake(t *testing.T, mode string) (*fakeCog, *httptest.Server) {
	f := &fakeCog{t: t, health: "READY", mode: mode, webhooks: true, preds: map[string]map[string]any{}, hooked: make(chan string, 16)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

var pngData = []byte("\x89PNG\r\n\x1a\n-fake-image")

func (f *fakeCog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.down {
		f.mu.Unlock()
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
		return
	}
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case r.Method == "GET" && path == "/health-check":
		_ = json.NewEncoder(w).Encode(map[string]any{"status": f.health, "setup": map[string]any{"status": "succeeded"}})
	case r.Method == "PUT" && strings.HasPrefix(path, "/predictions/"):
		id := strings.TrimPrefix(path, "/predictions/")
		f.puts++
		f.prefer = append(f.prefer, r.Header.Get("Prefer"))
		var body struct {
			ID      string          `json:"id"`
			Input   json.RawMessage `json:"input"`
			Webhook string          `json:"webhook"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch f.mode {
		case "busy":
			w.WriteHeader(409)
			_ = json.NewEncoder(w).Encode(map[string]any{"detail": "Already running a prediction"})
			return
		case "budget":
			w.WriteHeader(402)
			_ = json.NewEncoder(w).Encode(map[string]any{"detail": "monthly spend limit reached"})
			return
		case "forget": // accepted, then lost at once (a server that keeps restarting)
			w.WriteHeader(202)
			_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "status": "starting"})
			return
		case "refuse":
			w.WriteHeader(422)
			_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{{"loc": []string{"body", "input", "prompt"}, "msg": "field required", "type": "value_error.missing"}}})
			return
		}
		p := map[string]any{"id": id, "status": "processing", "input": body.Input, "logs": f.holdLogs}
		f.preds[id] = p
		w.WriteHeader(202)
		_ = json.NewEncoder(w).Encode(p)
		if f.mode != "hold" {
			go f.process(id, body.Webhook)
		}
	case r.Method == "GET" && strings.HasPrefix(path, "/predictions/"):
		p, ok := f.preds[strings.TrimPrefix(path, "/predictions/")]
		if !ok {
			w.WriteHeader(404)
			_ = json.NewEncoder(w).Encode(map[string]any{"detail": "Not Found"})
			return
		}
		_ = json.NewEncoder(w).Encode(p)
	case r.Method == "POST" && strings.HasSuffix(path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/predictions/"), "/cancel")
		f.cancelled = append(f.cancelled, id)
		if p, ok := f.preds[id]; ok {
			p["status"] = "canceled"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{})
	default:
		w.WriteHeader(404)
	}
}

// process finishes prediction id the way the mode says and sends the webhook.
func (f *fakeCog) process(id, webhook string) {
	f.mu.Lock()
	p, ok := f.preds[id]
	if !ok {
		f.mu.Unlock()
		return
	}
	p["logs"] = "loading weights\n 50%|#####     | 5/10\n100%|##########| 10/10\n"
	switch f.mode {
	case "fail":
		p["status"] = "failed"
		p["error"] = "CUDA out of memory"
	case "url":
		p["status"] = "succeeded"
		p["output"] = []any{f.fileURL}
	case "falshape": // files as the url of an object, the shape fal's clients read
		p["status"] = "succeeded"
		p["output"] = map[string]any{"images": []any{map[string]any{
			"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData), "width": 1}}}
	default:
		p["status"] = "succeeded"
		p["output"] = map[string]any{
			"images":  []any{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData)},
			"caption": "a cat",
			"seed":    42,
		}
		p["metrics"] = map[string]any{"predict_time": 0.25}
	}
	body, _ := json.Marshal(p)
	send := f.webhooks && webhook != ""
	f.mu.Unlock()
	if send {
		resp, err := http.Post(webhook, "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		f.hooked <- id
	}
}

// webhookRoute is the service's webhook route: it hands the delivery to Runner.Complete.
func webhookRoute(t *testing.T, rn **cog.Runner) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := (*rn).Complete(r.URL.Query().Get("id"), r.URL.Query().Get("token"), body); err != nil {
			http.Error(w, err.Error(), 404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

type outputs struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (o *outputs) Put(_ context.Context, name, ct string, data []byte) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files == nil {
		o.files = map[string][]byte{}
	}
	o.files["outputs/j/"+name] = data
	return "outputs/j/" + name, nil
}

type inputs map[string][]byte

func (in inputs) Fetch(_ context.Context, url string) ([]byte, string, error) {
	if d, ok := in[url]; ok {
		return d, http.DetectContentType(d), nil
	}
	return nil, "", errors.New("not found")
}

type reporter struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
}

func (r *reporter) Log(_, m string) { r.mu.Lock(); r.logs = append(r.logs, m); r.mu.Unlock() }
func (r *reporter) Progress(f float64) {
	r.mu.Lock()
	r.progress = append(r.progress, f)
	r.mu.Unlock()
}

// upscaleURLs is the url inputs of the catalogue's upscale model (inputs.image).
var upscaleURLs = func() func([]byte, func([]string, string) (string, error)) ([]byte, error) {
	c, err := catalog.Default()
	if err != nil {
		panic(err)
	}
	m, _ := c.Model("upscale")
	return m.MapURLs
}()

func fast(base, webhook string) cog.Config {
	return cog.Config{BaseURL: base, WebhookURL: webhook, MapURLs: upscaleURLs, RequestTimeout: time.Second, HealthTimeout: 2 * time.Second,
		HealthInterval: 5 * time.Millisecond, PollInterval: 10 * time.Millisecond, PredictionTimeout: 5 * time.Second}
}

func job() runners.Job {
	return runners.Job{ID: "photo_k1", RequestID: "req-1", Slug: "x", Input: json.RawMessage(`{"prompt":"a cat","seed":42}`)}
}

func TestSuccessViaWebhook(t *testing.T) {
	f, srv := newFake(t, "ok")
	var rn *cog.Runner
	hook := webhookRoute(t, &rn)
	cfg := fast(srv.URL, hook.URL+"/internal/cog")
	cfg.PollInterval = time.Hour // only the webhook can finish the run
	rn, _ = cog.New(cfg)
	out, rep := &outputs{}, &reporter{}
	res, err := rn.Run(context.Background(), job(), runners.Env{Outputs: out, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	imgs := res.Document["images"].([]any)
	img := imgs[0].(map[string]any)
	if img["storage_key"] != "outputs/j/output-0.png" || img["content_type"] != "image/png" || res.Document["caption"] != "a cat" {
		t.Fatalf("document %v", res.Document)
	}
	if !bytes.Equal(out.files["outputs/j/output-0.png"], pngData) || len(res.Files) != 1 || res.Done != 1 {
		t.Fatalf("files %v done %v", res.Files, res.Done)
	}
	if res.Metrics["predict_time"] != 0.25 {
		t.Fatalf("metrics %v", res.Metrics)
	}
	if f.prefer[0] != "respond-async" {
		t.Fatalf("Prefer %q", f.prefer[0])
	}
	if len(rep.progress) == 0 || rep.progress[len(rep.progress)-1] != 1 || !contains(rep.logs, "loading weights") {
		t.Fatalf("progress %v logs %v", rep.progress, rep.logs)
	}
	// A delivery with a wrong token, or for no run, is refused.
	if err := rn.Complete("req-1", "x", []byte(`{}`)); !errors.Is(err, cog.ErrUnknownPrediction) {
		t.Fatalf("late webhook: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestSuccessViaPollingAndURLOutput(t *testing.T) {
	f, srv := newFake(t, "url")
	f.fileURL = "https://cdn.example.com/out.png"
	rn, _ := cog.New(fast(srv.URL, "")) // no webhook: polling only
	out := &outputs{}
	res, err := rn.Run(context.Background(), job(), runners.Env{Outputs: out, Inputs: inputs{f.fileURL: pngData}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Document["output"].([]any)[0].(map[string]any)
	if got["content_type"] != "image/png" || !bytes.Equal(out.files[got["storage_key"].(string)], pngData) {
		t.Fatalf("document %v", res.Document)
	}
}

// TestFileAsAnObjectsURL: a file the model gives as the url of an object ({"url": "data:…",
// "width": 1}, fal's image shape) makes that object the file: its url becomes the signed link
// where it was (a string, as fal's clients read images[0].url), beside the object's own fields
// and the file's content type and size; it used to become an object nested under url.
func TestFileAsAnObjectsURL(t *testing.T) {
	_, srv := newFake(t, "falshape")
	rn, _ := cog.New(fast(srv.URL, ""))
	out := &outputs{}
	res, err := rn.Run(context.Background(), job(), runners.Env{Outputs: out})
	if err != nil {
		t.Fatal(err)
	}
	img := res.Document["images"].([]any)[0].(map[string]any)
	if _, nested := img["url"]; nested || img["width"] != json.Number("1") && img["width"] != float64(1) ||
		img["content_type"] != "image/png" || !bytes.Equal(out.files[img["storage_key"].(string)], pngData) {
		t.Fatalf("image %v", img)
	}
}

func TestModelFailure(t *testing.T) {
	_, srv := newFake(t, "fail")
	rn, _ := cog.New(fast(srv.URL, ""))
	_, err := rn.Run(context.Background(), job(), runners.Env{Outputs: &outputs{}})
	var fl *runners.Failure
	if !errors.As(err, &fl) || fl.Code != "runner_failed" || fl.Retryable || !strings.Contains(fl.Message, "CUDA out of memory") {
		t.Fatalf("err %v", err)
	}
}

// TestBusy: 409 on PUT and BUSY on /health-check are back-pressure (retryable).
func TestBusy(t *testing.T) {
	f, srv := newFake(t, "busy")
	rn, _ := cog.New(fast(srv.URL, ""))
	_, err := rn.Run(context.Background(), job(), runners.Env{})
	var fl *runners.Failure
	if !errors.As(err, &fl) || fl.Code != "upstream_busy" || !fl.Retryable {
		t.Fatalf("409: %v", err)
	}
	f.mu.Lock()
	f.mode, f.health = "ok", "BUSY"
	f.mu.Unlock()
	if _, err := rn.Run(context.Background(), job(), runners.Env{}); !errors.As(err, &fl) || fl.Code != "upstream_busy" || !fl.Retryable {
		t.Fatalf("BUSY: %v", err)
	}
}

func TestRefusalDetail(t *testing.T) {
	_, srv := newFake(t, "refuse")
	rn, _ := cog.New(fast(srv.URL, ""))
	_, err := rn.Run(context.Background(), job(), runners.Env{})
	var ref *runners.Refusal
	if !errors.As(err, &ref) || len(ref.Detail) != 1 || ref.Detail[0].Msg != "field required" ||
		strings.Join(ref.Detail[0].Loc, ".") != "body.input.prompt" || ref.Detail[0].Type != "value_error.missing" {
		t.Fatalf("err %v %+v", err, ref)
	}
}

// cancelOnSubmit cancels the run once the runner reports its prediction submitted (the model
// server answered the PUT), so the cancellation meets a running prediction.
type cancelOnSubmit struct{ cancel context.CancelFunc }

func (c cancelOnSubmit) Log(_, message string) {
	if strings.Contains(message, "submitted") {
		c.cancel()
	}
}
func (cancelOnSubmit) Progress(float64) {}

func TestCancel(t *testing.T) {
	f, srv := newFake(t, "hold")
	rn, _ := cog.New(fast(srv.URL, ""))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := rn.Run(ctx, job(), runners.Env{Report: cancelOnSubmit{cancel}})
	if !errors.Is(err, context.Canceled) || res.Done != 1 {
		t.Fatalf("err %v done %v", err, res.Done)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cancelled) != 1 || f.cancelled[0] != "req-1" {
		t.Fatalf("cancel calls %v", f.cancelled)
	}
}

func TestTimeout(t *testing.T) {
	f, srv := newFake(t, "hold")
	cfg := fast(srv.URL, "")
	cfg.PredictionTimeout = 80 * time.Millisecond
	rn, _ := cog.New(cfg)
	_, err := rn.Run(context.Background(), job(), runners.Env{})
	var fl *runners.Failure
	if !errors.As(err, &fl) || fl.Code != "run_timed_out" {
		t.Fatalf("err %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cancelled) != 1 {
		t.Fatalf("timeout did not cancel on the server: %v", f.cancelled)
	}
}

// TestServerRestart: the server goes away mid-prediction (connections dropped), comes back
// STARTING then READY having lost the prediction; the runner waits through /health-check
// and submits the prediction again.
func TestServerRestart(t *testing.T) {
	f, srv := newFake(t, "hold")
	rn, _ := cog.New(fast(srv.URL, ""))
	done := make(chan struct{})
	var res runners.Result
	var err error
	go func() {
		res, err = rn.Run(context.Background(), job(), runners.Env{Outputs: &outputs{}})
		close(done)
	}()
	waitFor(t, func() bool { return f.puts == 1 }, f)
	f.mu.Lock()
	f.down = true
	f.mu.Unlock()
	time.Sleep(30 * time.Millisecond) // a few polls fail on dropped connections
	f.mu.Lock()
	f.down, f.health, f.mode = false, "STARTING", "ok"
	f.preds = map[string]map[string]any{}
	f.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	f.health = "READY"
	f.mu.Unlock()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if f.puts != 2 || res.Document["images"] == nil {
		t.Fatalf("puts %d document %v", f.puts, res.Document)
	}
}

func waitFor(t *testing.T, cond func() bool, f *fakeCog) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		f.mu.Lock()
		ok := cond()
		f.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition never held")
}

func TestHealthGating(t *testing.T) {
	f, srv := newFake(t, "ok")
	f.health = "STARTING"
	cfg := fast(srv.URL, "")
	cfg.HealthTimeout = 50 * time.Millisecond
	rn, _ := cog.New(cfg)
	_, err := rn.Run(context.Background(), job(), runners.Env{})
	var fl *runners.Failure
	if !errors.As(err, &fl) || fl.Code != "runner_unavailable" || !fl.Retryable || f.puts != 0 {
		t.Fatalf("err %v puts %d", err, f.puts)
	}
	f.mu.Lock()
	f.health = "SETUP_FAILED"
	f.mu.Unlock()
	if _, err := rn.Run(context.Background(), job(), runners.Env{}); !errors.As(err, &fl) || fl.Retryable {
		t.Fatalf("setup failed: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := cog.New(cog.Config{BaseURL: "gpu:5000", MapURLs: upscaleURLs}); err == nil {
		t.Fatal("relative base accepted")
	}
	if _, err := cog.New(cog.Config{BaseURL: "http://gpu:5000"}); err == nil {
		t.Fatal("a runner that would pass url inputs to the model server unfetched")
	}
}

// TestCancelReportsProgress: a cancelled run reports the progress the model logged as Done.
func TestCancelReportsProgress(t *testing.T) {
	f, srv := newFake(t, "hold")
	f.holdLogs = "step\n 30%|###       | 3/10\n"
	rn, _ := cog.New(fast(srv.URL, ""))
	ctx, cancel := context.WithCancel(context.Background())
	rep := &reporter{}
	go func() {
		for {
			rep.mu.Lock()
			n := len(rep.progress)
			rep.mu.Unlock()
			if n > 0 {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	res, err := rn.Run(ctx, job(), runners.Env{Report: rep})
	if !errors.Is(err, context.Canceled) || res.Done != 0.3 {
		t.Fatalf("err %v done %v", err, res.Done)
	}
}

// TestERR_VendorBudgetExhausted: a Cog server answering 402 to a prediction (the model's
// provider out of budget) fails the run with vendor_budget_exhausted, a catalogued code, so
// the job's result read answers 503 vendor_budget_exhausted (retry same_key), refunded.
func TestERR_VendorBudgetExhausted(t *testing.T) {
	_, srv := newFake(t, "budget")
	rn, _ := cog.New(fast(srv.URL, ""))
	_, err := rn.Run(context.Background(), job(), runners.Env{Outputs: &outputs{}})
	var f *runners.Failure
	if !errors.As(err, &f) || f.Code != "vendor_budget_exhausted" || strings.Contains(f.Message, "cog:") {
		t.Fatalf("err = %v", err)
	}
}

// TestERR_UpstreamLost: a Cog server that loses the prediction every time it is submitted
// (404 on every poll) is resubmitted MaxResubmits times, then the run fails upstream_lost
// (410, refunded): the model lost the job.
func TestERR_UpstreamLost(t *testing.T) {
	f, srv := newFake(t, "forget")
	cfg := fast(srv.URL, "")
	cfg.MaxResubmits = 2
	rn, _ := cog.New(cfg)
	_, err := rn.Run(context.Background(), job(), runners.Env{Outputs: &outputs{}})
	var fl *runners.Failure
	if !errors.As(err, &fl) || fl.Code != "upstream_lost" {
		t.Fatalf("err = %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.puts != 3 {
		t.Fatalf("submitted %d times, want 3 (first + 2 resubmits)", f.puts)
	}
}

// TestREAD09_CancelUnsupportedCapability: a runner over a Cog server without a cancel route
// says it cannot cancel (runners.Canceller), which the jobs service turns into
// cancel_unsupported; by default it can.
func TestREAD09_CancelUnsupportedCapability(t *testing.T) {
	_, srv := newFake(t, "ok")
	rn, _ := cog.New(fast(srv.URL, ""))
	if !rn.CanCancel("x") {
		t.Fatal("a default Cog runner says it cannot cancel")
	}
	cfg := fast(srv.URL, "")
	cfg.CancelUnsupported = true
	rn, _ = cog.New(cfg)
	var c runners.Canceller = rn
	if c.CanCancel("x") {
		t.Fatal("CancelUnsupported runner says it can cancel")
	}
}

// TestERR_RunnerMessagesForUsers: a failure's message reaches the caller on the result read, so
// it is written for them: no Go error chain, no internal host or URL of the model server, no
// echo of what the server answered.
func TestERR_RunnerMessagesForUsers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health-check" {
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "READY"})
			return
		}
		w.WriteHeader(418)
		_, _ = io.WriteString(w, "Traceback: /srv/model/secret.py line 3")
	}))
	t.Cleanup(srv.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, base := range []string{srv.URL, gone.URL} {
		cfg := fast(base, "")
		cfg.HealthTimeout = 30 * time.Millisecond
		rn, _ := cog.New(cfg)
		_, err := rn.Run(context.Background(), job(), runners.Env{Outputs: &outputs{}})
		var f *runners.Failure
		if !errors.As(err, &f) {
			t.Fatalf("%s: %v", base, err)
		}
		for _, leak := range []string{"127.0.0.1", "http://", "Traceback", "secret", "dial", "submit:"} {
			if strings.Contains(f.Message, leak) {
				t.Fatalf("%s: message %q carries %q", base, f.Message, leak)
			}
		}
		if !strings.HasPrefix(f.Message, "The model") {
			t.Fatalf("%s: message %q", base, f.Message)
		}
	}
}

// A url input reaches the model server as the bytes the service fetched (a data: URL), never
// as the address: the server never dials what a user chose. An address the fetcher refuses
// (a private one) refuses the job at its field, and the server is never asked.
func TestURLInputsAreFetchedByTheService(t *testing.T) {
	f, srv := newFake(t, "ok")
	rn, err := cog.New(fast(srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	j := job()
	j.Input = json.RawMessage(`{"upscaleFactor":2,"inputs":{"image":"https://files.example/cat.png"}}`)
	out := &outputs{}
	if _, err := rn.Run(context.Background(), j, runners.Env{Outputs: out, Inputs: inputs{"https://files.example/cat.png": pngData}}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	var sent struct {
		Inputs struct{ Image string } `json:"inputs"`
	}
	for _, p := range f.preds {
		_ = json.Unmarshal(p["input"].(json.RawMessage), &sent)
	}
	f.mu.Unlock()
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData); sent.Inputs.Image != want {
		t.Fatalf("the model server got inputs.image %.60q, want the fetched bytes", sent.Inputs.Image)
	}

	j.ID, j.RequestID = "photo_k2", "req-2"
	j.Input = json.RawMessage(`{"inputs":{"image":"http://169.254.169.254/latest/meta-data/"}}`)
	_, err = rn.Run(context.Background(), j, runners.Env{Outputs: out, Inputs: inputs{}})
	var ref *runners.Refusal
	if !errors.As(err, &ref) || ref.Code != "image_unreadable" || strings.Join(ref.Detail[0].Loc, ".") != "body.inputs.image" {
		t.Fatalf("a file that cannot be fetched: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.puts != 1 {
		t.Fatalf("the model server was sent %d predictions, want only the first", f.puts)
	}
}
