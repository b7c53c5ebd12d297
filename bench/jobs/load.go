package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A load is one measurement's requests: c clients for d against one URL. By default the
// clients run in a process of their own (this program again, started with loadEnv set), as a
// load generator outside the service would: the service's process then runs the service
// alone, and the CPU it reports is the service's. -load in-process runs them in this process,
// sharing its scheduler and collector with the service.
type loadSpec struct {
	Method   string // POST or GET
	URL      string
	Clients  int
	Duration time.Duration
	Keys     []string // API keys, client i sending Keys[i % len]; none: no Authorization
	// Jobs: the POST bodies are numbered prompts, and a good answer is a settled job's status
	// document (200, COMPLETED), whose status_url the result carries.
	Jobs bool
}

// loadResult is what a load measured; the process running the service adds its own figures.
type loadResult struct {
	N, Errors       int
	PerSec          float64
	P50, P99        time.Duration
	StatusURL, Auth string // a settled job's status_url and the Authorization that made it
}

// loadEnv names the variable that makes this program a load generator: its value is the
// loadSpec as JSON, and the result is written to standard output as JSON.
const loadEnv = "MODELEXEC_BENCH_LOAD"

var separateLoad = true

// runLoad runs spec in a process of its own, or in this one (-load in-process).
func runLoad(client *http.Client, spec loadSpec) (loadResult, error) {
	if !separateLoad {
		return spec.run(client), nil
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return loadResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return loadResult{}, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), loadEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return loadResult{}, fmt.Errorf("load generator: %w", err)
	}
	var r loadResult
	if err := json.Unmarshal(out, &r); err != nil {
		return loadResult{}, fmt.Errorf("load generator's answer %q: %w", out, err)
	}
	return r, nil
}

// generateLoad is the load generator's process: it runs the load its environment names.
func generateLoad(specJSON string) error {
	var spec loadSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	return json.NewEncoder(os.Stdout).Encode(spec.run(client))
}

// run sends spec's requests from spec.Clients clients until spec.Duration has passed.
func (spec loadSpec) run(client *http.Client) loadResult {
	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   int
		seq    atomic.Int64
		status atomic.Value
		wg     sync.WaitGroup
	)
	// Warm the connections so the first requests do not pay for dialling.
	for range min(spec.Clients, 8) {
		if req, err := spec.request(0, seq.Add(1)); err == nil {
			if res, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}
	}
	start := time.Now()
	stop := start.Add(spec.Duration)
	for w := range spec.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for time.Now().Before(stop) {
				req, err := spec.request(w, seq.Add(1))
				if err != nil {
					bad++
					continue
				}
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					bad++
					continue
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if url, ok := spec.good(res, body); ok {
					mine = append(mine, time.Since(t0))
					if url != "" {
						status.Store([2]string{url, req.Header.Get("Authorization")})
					}
				} else {
					bad++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := loadResult{N: len(lat), Errors: errs, PerSec: float64(len(lat)) / elapsed.Seconds(), P50: pct(lat, 50), P99: pct(lat, 99)}
	if last, ok := status.Load().([2]string); ok {
		r.StatusURL, r.Auth = last[0], last[1]
	}
	return r
}

func (spec loadSpec) request(client int, n int64) (*http.Request, error) {
	var body io.Reader
	if spec.Method == http.MethodPost {
		prompt := "bench"
		if spec.Jobs {
			prompt = fmt.Sprintf("bench %d", n)
		}
		body = strings.NewReader(`{"positivePrompt":"` + prompt + `"}`)
	}
	req, err := http.NewRequest(spec.Method, spec.URL, body)
	if err != nil {
		return nil, err
	}
	if len(spec.Keys) > 0 {
		req.Header.Set("Authorization", "Bearer "+spec.Keys[client%len(spec.Keys)])
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// good says whether res answers the load's request as it should, and the settled job's
// status_url when it is a job's.
func (spec loadSpec) good(res *http.Response, body []byte) (string, bool) {
	if !spec.Jobs {
		return "", res.StatusCode < 300
	}
	var doc struct {
		Status    string `json:"status"`
		StatusURL string `json:"status_url"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &doc) != nil || doc.Status != "COMPLETED" {
		if os.Getenv("BENCH_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "%d %s\n", res.StatusCode, body)
		}
		return "", false
	}
	return doc.StatusURL, true
}
