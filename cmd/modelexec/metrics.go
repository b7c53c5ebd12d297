package main

import (
	"net/http"
	"net/http/pprof"

	"github.com/modelexec/modelexec/internal/metrics"
)

// instrument counts and times every surface's requests and serves Prometheus /metrics and
// net/http/pprof on the operator listener --metrics-addr. Without that flag nothing is
// added: the figures would have nowhere to go, and pprof must never face the public.
func (c *ServeCmd) instrument(a *app) *metrics.Metrics {
	if c.MetricsAddr == "" {
		return nil
	}
	m := metrics.New()
	for name, s := range a.servers {
		s.handler = m.Middleware(name, s.handler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	a.servers["operator"] = &server{addr: c.MetricsAddr, handler: mux}
	return m
}
