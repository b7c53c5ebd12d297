package main

import (
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/server"
)

// TestServeMetricsListener: with --metrics-addr, serve counts each surface's requests and
// the operator listener exposes them (and pprof); without it there is no operator listener.
func TestServeMetricsListener(t *testing.T) {
	c := &ServeCmd{Roles: "api,queue,sync", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"}
	c.Data, c.Secret = migratedData(t), "metrics-test-secret-0123456789"
	a, err := serveWith(t, c)
	if err != nil {
		t.Fatal(err)
	}
	op := a.Handler(server.RoleOperator)
	if op == nil {
		t.Fatal("no operator listener with --metrics-addr")
	}
	get(a.Handler(server.RoleAPI), "GET", "/healthz")
	get(a.Handler(server.RoleAPI), "GET", "/v1/me") // 401: counted as unmatched
	get(a.Handler(server.RoleQueue), "GET", "/healthz")
	rec := get(op, "GET", "/metrics")
	body := rec.Body.String()
	for _, want := range []string{
		`modelexec_http_requests_total{route="/healthz",status="200",surface="api"} 1`,
		`modelexec_http_requests_total{route="/healthz",status="200",surface="queue"} 1`,
		`modelexec_http_requests_total{route="unmatched",status="401",surface="api"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if rec := get(op, "GET", "/debug/pprof/"); rec.Code != 200 {
		t.Errorf("pprof index: %d", rec.Code)
	}

	c2 := &ServeCmd{Roles: "api", APIAddr: "127.0.0.1:0"}
	c2.Data, c2.Secret = migratedData(t), "metrics-test-secret-0123456789"
	a2, err := serveWith(t, c2)
	if err != nil {
		t.Fatal(err)
	}
	if a2.Handler(server.RoleOperator) != nil {
		t.Fatal("an operator listener without --metrics-addr")
	}
}
