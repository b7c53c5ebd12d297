package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/modelexec/modelexec/internal/metrics"
)

// instrument counts and times every surface's requests and serves Prometheus /metrics and
// net/http/pprof on the operator listener (Config.MetricsAddr). Without that address nothing
// is added: the figures would have nowhere to go, and pprof must never face the public.
func (s *Server) instrument() {
	if s.cfg.MetricsAddr == "" {
		return
	}
	m := metrics.New()
	for role, h := range s.handlers {
		s.handlers[role] = m.Middleware(string(role), h)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.handlers[RoleOperator] = mux
}
