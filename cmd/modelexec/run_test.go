package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe to write from the serving goroutine while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// devService runs `modelexec serve --dev` on free ports and returns the account API and queue
// host base URLs and the development key it printed.
func devService(t *testing.T) (api, queue, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	data := migratedData(t)
	apiAddr, queueAddr, syncAddr := freePort(t), freePort(t), freePort(t)
	out := &syncBuffer{}
	served := make(chan error, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--dev", "--data", data, "--api-addr", apiAddr, "--queue-addr", queueAddr,
			"--sync-addr", syncAddr, "--log-level", "error", "--drain-delay", "0"}, noEnv, out, io.Discard)
	}()
	t.Cleanup(func() { cancel(); <-served })
	res := waitFor(t, func() (*http.Response, error) { return http.Get("http://" + queueAddr + "/healthz") })
	res.Body.Close()
	m := regexp.MustCompile(`API key \(shown once\): (\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no key in serve --dev output: %s", out.String())
	}
	return "http://" + apiAddr, "http://" + queueAddr, m[1]
}

// TestRunCommandEndToEnd: `modelexec run` against a real server runs a built-in image model
// through the SDK (submit, status stream, result), prints plain progress lines when not on a
// terminal, and downloads the output image into --out next to result.json; a --file input
// is uploaded and an upscale of it comes back at the asked size; `modelexec quote`
// prints the model's published price rule; a missing key is refused before any request.
func TestRunCommandEndToEnd(t *testing.T) {
	api, queue, key := devService(t)
	dir := filepath.Join(t.TempDir(), "out")
	hosts := []string{"--api-url", api, "--queue-url", queue}
	getenv := func(k string) string {
		if k == "MODELEXEC_KEY" {
			return key
		}
		return ""
	}
	var stdout, stderr bytes.Buffer
	args := append([]string{"run", "image-4b", "--input", "positivePrompt=a red fox in the snow", "--input", "width=512",
		"--input", "height=512", "--out", dir}, hosts...)
	if err := run(context.Background(), args, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "submitted ") || !strings.Contains(stderr.String(), "\nCOMPLETED\n") {
		t.Fatalf("progress lines missing: %s", stderr.String())
	}
	files := strings.Fields(stdout.String())
	if len(files) == 0 {
		t.Fatalf("no output downloaded; stdout %q stderr %s", stdout.String(), stderr.String())
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 || filepath.Dir(f) != dir {
			t.Fatalf("output %s: %v (%d bytes)", f, err, len(b))
		}
		if ct := http.DetectContentType(b); !strings.HasPrefix(ct, "image/") {
			t.Fatalf("output %s is %s, want an image", f, ct)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		t.Fatal(err)
	}

	// An input file is uploaded (POST /v1/uploads, then the signed PUT) and its link sent.
	src := filepath.Join(t.TempDir(), "small.png")
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 64, 48))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, img.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(t.TempDir(), "up")
	stdout.Reset()
	args = append([]string{"run", "upscale", "-i", "upscaleFactor=2", "-i", "outputFormat=PNG", "--file", "inputs.image=" + src, "--out", up}, hosts...)
	if err := run(context.Background(), args, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("run upscale: %v\nstderr: %s", err, stderr.String())
	}
	files = strings.Fields(stdout.String())
	if len(files) != 1 {
		t.Fatalf("upscale outputs %q", stdout.String())
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(f)
	f.Close()
	if err != nil || cfg.Width != 128 || cfg.Height != 96 {
		t.Fatalf("upscaled %dx%d (%v), want 128x96", cfg.Width, cfg.Height, err)
	}

	stdout.Reset()
	if err := run(context.Background(), append([]string{"quote", "svc-serverless/image-4b"}, hosts...), getenv, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "svc-serverless/image-4b: priced per ") || !strings.Contains(stdout.String(), "credits per ") {
		t.Fatalf("quote output: %s", stdout.String())
	}

	err = run(context.Background(), append([]string{"run", "image-4b"}, hosts...), noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "MODELEXEC_KEY") {
		t.Fatalf("run without a key: %v", err)
	}
}

func noEnv(string) string { return "" }

// TestRunReportsTheCharge: `modelexec run` reports what the job cost, as its job record
// (GET /v1/jobs/{id}) says, not the 0 of a status document that carries no charge.
func TestRunReportsTheCharge(t *testing.T) {
	api, queue, key := devService(t)
	getenv := func(k string) string {
		if k == "MODELEXEC_KEY" {
			return key
		}
		return ""
	}
	var stdout, stderr bytes.Buffer
	args := []string{"run", "image-4b", "--input", "positivePrompt=a fox", "--input", "width=512", "--input", "height=512",
		"--api-url", api, "--queue-url", queue}
	if err := run(context.Background(), args, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	q := regexp.MustCompile(`submitted (\S+) \(quoted (\d+) credits\)`).FindStringSubmatch(stderr.String())
	c := regexp.MustCompile(`completed (\S+) \(charged (\d+) credits\)`).FindStringSubmatch(stderr.String())
	if q == nil || c == nil {
		t.Fatalf("run printed %s", stderr.String())
	}
	if q[2] == "0" || c[2] != q[2] {
		t.Fatalf("quoted %s credits but reported a charge of %s: %s", q[2], c[2], stderr.String())
	}
}

// devCLI starts a development server and answers a runCLI for the user commands against it,
// with its key in MODELEXEC_KEY.
func devCLI(t *testing.T) func(args ...string) (stdout, stderr string, err error) {
	t.Helper()
	api, queue, key := devService(t)
	env := map[string]string{"MODELEXEC_KEY": key}
	return func(args ...string) (string, string, error) {
		return runCLI(t, env, append(args, "--api-url", api, "--queue-url", queue)...)
	}
}

// TestERR31_RunFollowsAReplayedJobOnAnotherModel: `modelexec run image-4b --idempotency-key k`
// after a run of image-turbo with k answers image-turbo's job (a key answers the first request,
// whatever model is sent later) and follows it to its result, rather than reading it under
// image-4b, which answers 404.
func TestERR31_RunFollowsAReplayedJobOnAnotherModel(t *testing.T) {
	cli := devCLI(t)
	if _, stderr, err := cli("run", "image-turbo", "-i", "positivePrompt=a cat", "--idempotency-key", "order-77"); err != nil {
		t.Fatalf("first run: %v\n%s", err, stderr)
	}
	stdout, stderr, err := cli("run", "image-4b", "-i", "positivePrompt=a fox", "-i", "width=512", "-i", "height=512", "--idempotency-key", "order-77")
	if err != nil {
		t.Fatalf("replayed run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, `"images"`) {
		t.Fatalf("replayed run printed %q\n%s", stdout, stderr)
	}
}

// TestERR_RunPrintsEveryProblemOnce: a run the service refuses for several fields says each
// field and its problem, and its error has no "modelexec:" of its own (main adds one).
func TestERR_RunPrintsEveryProblemOnce(t *testing.T) {
	cli := devCLI(t)
	_, _, err := cli("run", "image-4b", "-i", "positivePrompt=a fox", "-i", "width=99999", "-i", "height=5", "-i", "steps=0")
	if err == nil {
		t.Fatal("run with three bad fields succeeded")
	}
	for _, f := range []string{"invalid_input", "width: ", "height: ", "steps: "} {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("run error %q lacks %q", err, f)
		}
	}
	if strings.Contains(err.Error(), "modelexec:") {
		t.Fatalf("run error %q would print as modelexec: modelexec: …", err)
	}
}

// TestRunTakesCommasInValues: -i and --file values are taken whole: a prompt with a comma is
// one input, and a file path with a comma is uploaded.
func TestRunTakesCommasInValues(t *testing.T) {
	cli := devCLI(t)
	src := filepath.Join(t.TempDir(), "a, b.png")
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 32, 32))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, img.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := cli("run", "image-4b", "-i", "positivePrompt=a red fox, in the snow", "-i", "width=512", "-i", "height=512"); err != nil {
		t.Fatalf("a comma in a value: %v\n%s", err, stderr)
	}
	if _, stderr, err := cli("run", "upscale", "-i", "upscaleFactor=2", "--file", "inputs.image="+src); err != nil {
		t.Fatalf("a comma in a file path: %v\n%s", err, stderr)
	}
}

// TestERR31_RunSaysAReplayWasNotCharged: a second run with the same --idempotency-key says it
// replayed the first job and was not charged, where the first says what it cost.
func TestERR31_RunSaysAReplayWasNotCharged(t *testing.T) {
	cli := devCLI(t)
	args := []string{"run", "image-4b", "-i", "positivePrompt=a fox", "-i", "width=512", "-i", "height=512", "--idempotency-key", "twice"}
	_, first, err := cli(args...)
	if err != nil || !regexp.MustCompile(`completed \S+ \(charged [1-9]\d* credits\)`).MatchString(first) {
		t.Fatalf("first run: %v\n%s", err, first)
	}
	_, second, err := cli(args...)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, second)
	}
	if regexp.MustCompile(`\(charged \d+ credits\)`).MatchString(second) || !strings.Contains(second, "nothing was charged this time") {
		t.Fatalf("replayed run printed %s", second)
	}
}
