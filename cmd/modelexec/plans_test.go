package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/plans"
)

// TestI10_OperatorKnobs: `modelexec plans` prints the plan figures as a file `plans --check`
// and `serve --plans` read; an edited copy is what the service enforces (the read bucket's
// RateLimit-Limit, over HTTP); a broken file is refused, naming the place; a catalogue entry
// naming the built-in "noop" runner answers at once with its small document. Proves issue 10
// item 6 (DESIGN 34).
func TestI10_OperatorKnobs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noenv := func(string) string { return "" }
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"plans"}, noenv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	p, err := plans.Load(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("`modelexec plans` does not load back: %v", err)
	}
	if !bytes.Equal(p.JSON(), plans.Default().JSON()) || p.InFlight["pro"] != 10 || p.Rates["pro"]["read"].Burst != 60 || p.Seats.PerAccount != 12 {
		t.Fatalf("printed figures differ from the built-in ones:\n%s", out.String())
	}

	// The operator's copy: pro reads burst 55 (not 60), the built-in default.
	var f map[string]any
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	pro := f["plans"].(map[string]any)["pro"].(map[string]any)
	pro["rates"].(map[string]any)["read"].(map[string]any)["burst"] = 55
	dir := t.TempDir()
	good := filepath.Join(dir, "plans.json")
	writeFile(t, good, f)
	out.Reset()
	if err := run(ctx, []string{"plans", "--check", good}, noenv, &out, &errOut); err != nil || !strings.Contains(out.String(), "4 plans") {
		t.Fatalf("plans --check: %v %q", err, out.String())
	}
	pro["rates"].(map[string]any)["read"].(map[string]any)["burst"] = -1
	delete(pro["rates"].(map[string]any), "egress")
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, f)
	err = run(ctx, []string{"plans", "--check", bad}, noenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "plans.pro.rates.read") || !strings.Contains(err.Error(), "plans.pro.rates.egress: missing") {
		t.Fatalf("plans --check of a broken file: %v", err)
	}

	// A catalogue where image-4b is run by the no-op runner.
	var cf catalog.File
	if err := json.Unmarshal(catalog.DefaultData(), &cf); err != nil {
		t.Fatal(err)
	}
	for i := range cf.Models {
		if cf.Models[i].Slug == "image-4b" {
			cf.Models[i].Runner = "noop"
		}
	}
	catFile := filepath.Join(dir, "catalogue.json")
	writeFile(t, catFile, cf)

	data := migratedData(t)
	api, queue, sync := freePort(t), freePort(t), freePort(t)
	serveArgs := func(plansFile string) []string {
		return []string{"serve", "--data", data, "--secret", "knobs-secret-0123456789", "--plans", plansFile, "--catalogue", catFile,
			"--api-addr", api, "--queue-addr", queue, "--sync-addr", sync, "--model-concurrency", "2", "--log-level", "error", "--drain-delay", "0"}
	}
	if err := run(ctx, serveArgs(bad), noenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("serve with a broken plans file: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- run(ctx, serveArgs(good), noenv, io.Discard, io.Discard) }()
	defer func() { cancel(); <-served }()

	_, key := operatorKey(t, data, "knobs-secret-0123456789", 1000)

	res := waitFor(t, func() (*http.Response, error) { return do("GET", "http://"+api+"/v1/me", key.Key, "") })
	res.Body.Close()
	if got := res.Header.Get("RateLimit-Limit"); got != "55" {
		t.Fatalf("RateLimit-Limit %q on a read, want the plans file's 55", got)
	}
	res, err = do("POST", "http://"+sync+"/svc-serverless/image-4b", key.Key, `{"positivePrompt":"sizing"}`)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"runner":"noop"`) {
		t.Fatalf("image-4b on the noop runner: %d %s", res.StatusCode, body)
	}
}

func writeFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func do(method, u, key, body string) (*http.Response, error) {
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}

// waitFor retries f until the server answers (it is starting: a fresh database's migrations
// and --dev's first user, under the race detector on a loaded machine, can take most of a
// minute).
func waitFor(t *testing.T, f func() (*http.Response, error)) *http.Response {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := f()
		if err == nil {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("server did not answer: %w", err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestI30_PlanFiguresInRange: a plans file whose bucket figures would overflow the limiter's
// arithmetic (a burst of 2^40 at 60 a minute fills again in 35,000 years of nanoseconds) is
// refused by `plans --check` and by `serve`, naming the plan, the field and the range it may
// take; figures at the top of their range (a trillion tokens, refilled a trillion a second,
// faster than the limiter's one token a microsecond) are served, and a read answers 200 with
// the file's limit. Proves issue 30 item 1.
func TestI30_PlanFiguresInRange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noenv := func(string) string { return "" }
	var f map[string]any
	if err := json.Unmarshal(plans.Default().JSON(), &f); err != nil {
		t.Fatal(err)
	}
	read := f["plans"].(map[string]any)["pro"].(map[string]any)["rates"].(map[string]any)["read"].(map[string]any)
	dir := t.TempDir()
	read["burst"], read["refill"], read["period"] = int64(1)<<40, 60, "1m"
	huge := filepath.Join(dir, "huge.json")
	writeFile(t, huge, f)
	read["burst"], read["refill"], read["period"] = 1_000_000_000_000, 1_000_000_000_000, "1s"
	large := filepath.Join(dir, "large.json")
	writeFile(t, large, f)

	const want = "plans.pro.rates.read.burst: 1099511627776 is out of range 0 to 315360000 at refill 60 per 1m"
	err := run(ctx, []string{"plans", "--check", huge}, noenv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("plans --check of a burst of 2^40: %v, want %q", err, want)
	}
	data := migratedData(t)
	api := freePort(t)
	serveArgs := func(plansFile string) []string {
		return []string{"serve", "--data", data, "--secret", "range-secret-0123456789", "--plans", plansFile,
			"--api-addr", api, "--queue-addr", freePort(t), "--sync-addr", freePort(t), "--log-level", "error", "--drain-delay", "0"}
	}
	if err := run(ctx, serveArgs(huge), noenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("serve with a burst of 2^40: %v, want %q", err, want)
	}

	served := make(chan error, 1)
	go func() { served <- run(ctx, serveArgs(large), noenv, io.Discard, io.Discard) }()
	defer func() { cancel(); <-served }()
	_, key := operatorKey(t, data, "range-secret-0123456789", 10)
	for i := range 3 {
		res := waitFor(t, func() (*http.Response, error) { return do("GET", "http://"+api+"/v1/me", key.Key, "") })
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("RateLimit-Limit") != "1000000000000" {
			t.Fatalf("read %d under a trillion-token bucket: %d, RateLimit-Limit %q: %s", i+1, res.StatusCode, res.Header.Get("RateLimit-Limit"), body)
		}
	}
}

// TestI30_CatalogueFiguresInRange: a catalogue file whose time limit would overflow a duration
// (a stall ceiling of 2^40 seconds) is refused by `catalogue --check` and by `serve`, naming the
// model, the field and its range; figures at the top of their ranges are served: a run under
// the longest stall ceiling answers 200, and a price of a million credits a unit answers 403
// key_credit_ceiling with the exact quote (1.048576 units). Proves issue 30 item 1 for the catalogue.
func TestI30_CatalogueFiguresInRange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noenv := func(string) string { return "" }
	edit := func(stall int64, perUnit string) catalog.File {
		var cf catalog.File
		if err := json.Unmarshal(catalog.DefaultData(), &cf); err != nil {
			t.Fatal(err)
		}
		for i := range cf.Models {
			switch cf.Models[i].Slug {
			case "image-4b":
				cf.Models[i].Runner, cf.Models[i].Lifecycle.StallCeilingSeconds = "noop", int(stall)
			case "image-lite":
				cf.Models[i].Price.Bands[0].CreditsPerUnit = perUnit
			}
		}
		return cf
	}
	dir := t.TempDir()
	huge, top := filepath.Join(dir, "huge.json"), filepath.Join(dir, "top.json")
	writeFile(t, huge, edit(1<<40, "1"))
	writeFile(t, top, edit(catalog.MaxLimitSeconds, "1000000"))

	const want = `model "image-4b": lifecycle.stall_ceiling_seconds: 1099511627776 is out of range 1 to 31622400`
	if err := run(ctx, []string{"catalogue", "--check", huge}, noenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("catalogue --check of a stall ceiling of 2^40 s: %v, want %q", err, want)
	}
	data := migratedData(t)
	api, sync := freePort(t), freePort(t)
	serveArgs := func(catFile string) []string {
		return []string{"serve", "--data", data, "--secret", "range-secret-0123456789", "--catalogue", catFile,
			"--api-addr", api, "--queue-addr", freePort(t), "--sync-addr", sync, "--log-level", "error", "--drain-delay", "0"}
	}
	if err := run(ctx, serveArgs(huge), noenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("serve with a stall ceiling of 2^40 s: %v, want %q", err, want)
	}

	served := make(chan error, 1)
	go func() { served <- run(ctx, serveArgs(top), noenv, io.Discard, io.Discard) }()
	defer func() { cancel(); <-served }()
	_, key := operatorKey(t, data, "range-secret-0123456789", 100)
	waitFor(t, func() (*http.Response, error) { return do("GET", "http://"+api+"/v1/me", key.Key, "") }).Body.Close()
	for _, c := range []struct {
		slug   string
		status int
		says   string
	}{
		{"image-4b", http.StatusOK, `"runner":"noop"`},
		{"image-lite", http.StatusForbidden, `"required":1048576`},
	} {
		res, err := do("POST", "http://"+sync+"/svc-serverless/"+c.slug, key.Key, `{"positivePrompt":"a fox"}`)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || !strings.Contains(string(body), c.says) {
			t.Fatalf("%s at the top of its figures' ranges: %d %s, want %d with %s", c.slug, res.StatusCode, body, c.status, c.says)
		}
	}
}

// operatorKey creates a pro account with credits (aged three days, past the newcomer limits)
// and mints it a key through the operator commands on data, as an operator does.
func operatorKey(t *testing.T, data, secret string, credits int, flags ...string) (acct, key struct{ ID, Key string }) {
	t.Helper()
	console := func(v any, args ...string) {
		t.Helper()
		var b bytes.Buffer
		args = append(append(args, "--data", data, "--secret", secret, "--json"), flags...)
		if err := run(context.Background(), args, func(string) string { return "" }, &b, io.Discard); err != nil {
			t.Fatal(args, err)
		}
		if err := json.Unmarshal(b.Bytes(), v); err != nil {
			t.Fatal(err, b.String())
		}
	}
	console(&acct, "accounts", "create", "--plan", "pro", "--credits", strconv.Itoa(credits), "--created-at", time.Now().Add(-72*time.Hour).UTC().Format(time.RFC3339))
	console(&key, "keys", "mint", "--account", acct.ID)
	return acct, key
}
