package server

import (
	"context"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/metrics"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// observe creates the process's metrics when it has an operator listener (Config.MetricsAddr)
// and hands each domain its Recorder: the gate counts rate-limit refusals, the jobs engine
// settled jobs and the credits they moved; queue depth, running jobs and seats in use are
// read at scrape time. Without that address nothing is created: the figures would have
// nowhere to go.
func (s *Server) observe(gate *httpapi.Gate) error {
	if s.cfg.MetricsAddr == "" {
		return nil
	}
	m := metrics.New()
	s.metrics = m
	gate.Metrics = m
	s.jobs.Observe(m)
	seats := s.jobs.Seats()
	for _, g := range []struct {
		name, help string
		read       func() float64
	}{
		{"modelexec_queue_depth", "Jobs waiting for a slot, every model together (read from the database at scrape time).", s.queueDepth},
		{"modelexec_jobs_running", "Jobs this process runs now.", func() float64 { return float64(s.jobs.Running()) }},
		{"modelexec_seats_in_use", "Held connections (synchronous runs, waits, status streams) holding a seat in this process.",
			func() float64 { return float64(seats.InUse()) }},
	} {
		if err := m.GaugeFunc(g.name, g.help, g.read); err != nil {
			return err
		}
	}
	return nil
}

// queueDepth is the queue-depth gauge's reading; a failed read shows -1 (and a warning)
// rather than a depth of zero that would read as "all clear".
func (s *Server) queueDepth() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := s.jobs.QueueDepth(ctx)
	if err != nil {
		s.log.Warn("metrics: queue depth", "err", err)
		return -1
	}
	return float64(n)
}

// webhookMetrics is the delivery engine's Recorder (nil without metrics: a nil
// *metrics.Metrics must not become a non-nil interface).
func (s *Server) webhookMetrics() webhooks.Recorder {
	if s.metrics == nil {
		return nil
	}
	return s.metrics
}

// instrument counts and times every surface's requests and serves Prometheus /metrics and
// net/http/pprof on the operator listener. Without metrics nothing is added: pprof must
// never face the public.
func (s *Server) instrument() {
	m := s.metrics
	if m == nil {
		return
	}
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
	// Its bodies are bounded in time as every surface's are: a client that declares a body and
	// sends none holds no goroutine here either.
	s.handlers[RoleOperator] = httpapi.LimitBodies(httpapi.DefaultLimits(), mux)
}
