package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/accountapi"
)

// TestERR90_NotConfiguredFromServe proves ERR-90's not_configured reachable from serve's own
// configuration, over HTTP: `serve --no-uploads` still serves POST /v1/uploads and fal's POST
// /storage/upload/initiate (they are in the API's contract) and answers both 503 not_configured
// after the key and scope checks, saying what is missing and what to do instead, charging
// nothing; the rest of the API answers as usual. Without the flag the same request gets its
// upload link.
func TestERR90_NotConfiguredFromServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noenv := func(string) string { return "" }
	data := migratedData(t)
	const secret = "no-uploads-secret-0123456789"
	api := freePort(t)
	serve := func(ctx context.Context, extra ...string) error {
		args := append([]string{"serve", "--data", data, "--secret", secret, "--api-addr", api,
			"--queue-addr", freePort(t), "--sync-addr", freePort(t), "--log-level", "error", "--drain-delay", "0"}, extra...)
		return run(ctx, args, noenv, io.Discard, io.Discard)
	}
	_, key := operatorKey(t, data, secret, 100, "--create")
	post := func(path string) (int, map[string]any) {
		t.Helper()
		res := waitFor(t, func() (*http.Response, error) {
			return do("POST", "http://"+api+path, key.Key, `{"content_type":"image/png"}`)
		})
		defer res.Body.Close()
		var body map[string]any
		raw, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
		}
		return res.StatusCode, body
	}

	off, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serve(off, "--no-uploads") }()
	for _, path := range []string{"/v1/uploads", accountapi.FalInitiatePath} {
		code, body := post(path)
		msg, _ := body["message"].(string)
		if code != http.StatusServiceUnavailable || body["error"] != "not_configured" || body["charged"] != "no" ||
			!strings.Contains(msg, "Uploads are not configured") || !strings.Contains(msg, "URLs") {
			t.Fatalf("POST %s under --no-uploads: %d %v", path, code, body)
		}
	}
	res, err := do("GET", "http://"+api+"/v1/me", key.Key, "")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/me under --no-uploads: %d", res.StatusCode)
	}
	stop()
	<-served // its listeners are closed: the next serve takes the same address

	go func() { served <- serve(ctx) }()
	defer func() { cancel(); <-served }()
	if code, body := post("/v1/uploads"); code != http.StatusCreated || body["upload_url"] == nil {
		t.Fatalf("POST /v1/uploads with uploads on: %d %v", code, body)
	}
}
