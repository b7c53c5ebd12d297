package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Recorder is what the domains report to. Every method is safe for concurrent use and
// cheap; Nop discards everything.
type Recorder interface {
	// JobFinished counts one job reaching a terminal outcome (succeeded, failed,
	// cancelled, …) and observes how long it ran.
	JobFinished(model, outcome string, ran time.Duration)
	// CreditsCharged and CreditsRefunded count ledger movements, by product.
	CreditsCharged(product string, credits int64)
	CreditsRefunded(product string, credits int64)
	// WebhookDelivery counts one delivery attempt by outcome (delivered, failed, dead)
	// and ladder step (1 for the first attempt … 7).
	WebhookDelivery(outcome string, step int)
	// RateLimited counts one refusal by bucket (read, write, generate, egress, interactive).
	RateLimited(bucket string)
}

// Nop is the Recorder of a process without metrics.
type Nop struct{}

var _ Recorder = Nop{}

func (Nop) JobFinished(string, string, time.Duration) {}
func (Nop) CreditsCharged(string, int64)              {}
func (Nop) CreditsRefunded(string, int64)             {}
func (Nop) WebhookDelivery(string, int)               {}
func (Nop) RateLimited(string)                        {}

// Metrics is the Prometheus Recorder and the HTTP instrumentation of one process.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	jobs     *prometheus.CounterVec
	jobTime  *prometheus.HistogramVec
	charged  *prometheus.CounterVec
	refunded *prometheus.CounterVec
	hooks    *prometheus.CounterVec
	limited  *prometheus.CounterVec
}

var _ Recorder = (*Metrics)(nil)

// New returns the metrics of one process, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modelexec_http_requests_total",
			Help: "HTTP requests answered, by surface, route pattern and status code."}, []string{"surface", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "modelexec_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request (held connections and streams included), by surface and route.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"surface", "route"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modelexec_jobs_total",
			Help: "Jobs that reached a terminal outcome, by model and outcome."}, []string{"model", "outcome"}),
		jobTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "modelexec_job_duration_seconds",
			Help:    "How long finished jobs ran, by model and outcome.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2, 5, 10, 30, 60, 120, 300, 900}}, []string{"model", "outcome"}),
		charged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modelexec_credits_charged_total",
			Help: "Credits charged by the ledger, by product."}, []string{"product"}),
		refunded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modelexec_credits_refunded_total",
			Help: "Credits given back by the ledger, by product."}, []string{"product"}),
		hooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modelexec_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by outcome and ladder step."}, []string{"outcome", "step"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modelexec_rate_limited_total",
			Help: "Requests refused by a rate-limit bucket, by bucket."}, []string{"bucket"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.jobs, m.jobTime, m.charged, m.refunded, m.hooks, m.limited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the Prometheus text exposition of every series.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// GaugeFunc registers a gauge read at scrape time (queue depth, seats in use).
func (m *Metrics) GaugeFunc(name, help string, read func() float64) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read))
}

func (m *Metrics) JobFinished(model, outcome string, ran time.Duration) {
	m.jobs.WithLabelValues(model, outcome).Inc()
	m.jobTime.WithLabelValues(model, outcome).Observe(ran.Seconds())
}

func (m *Metrics) CreditsCharged(product string, credits int64) {
	if credits > 0 {
		m.charged.WithLabelValues(product).Add(float64(credits))
	}
}

func (m *Metrics) CreditsRefunded(product string, credits int64) {
	if credits > 0 {
		m.refunded.WithLabelValues(product).Add(float64(credits))
	}
}

func (m *Metrics) WebhookDelivery(outcome string, step int) {
	m.hooks.WithLabelValues(outcome, strconv.Itoa(step)).Inc()
}

func (m *Metrics) RateLimited(bucket string) { m.limited.WithLabelValues(bucket).Inc() }

// Unmatched is the route label of a request no route pattern answered (or one whose
// pattern is unknown): raw paths never become labels, so a scanner cannot grow the series.
const Unmatched = "unmatched"

// Middleware counts and times every request of one surface. The route label is the
// ServeMux pattern that answered (e.g. "GET /v1/jobs/{id}"): wrap the ServeMux itself
// (or a handler that passes the same *http.Request to it), since the mux records the
// pattern on the request it is given. Wrapped around a whole surface (whose handlers see
// copies of the request), it labels by a template of the path instead (see template).
func (m *Metrics) Middleware(surface string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			route := r.Pattern
			if route == "" {
				route = template(status, r.URL.Path)
			}
			m.requests.WithLabelValues(surface, route, strconv.Itoa(status)).Inc()
			m.latency.WithLabelValues(surface, route).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status code; Unwrap lets http.ResponseController reach
// Flush and deadlines of the writer beneath (streams, held connections).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		if s.status == 0 {
			s.status = http.StatusOK
		}
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// template is the route label of a request that reached no ServeMux pattern this
// middleware can see (it wraps a whole surface): the path with each segment that is not
// a plain word (ids, keys, hashes: anything with an underscore, or a digit in a long
// segment) written {id}, and everything after /files/ written {key}. Requests refused
// before or without routing (401, 403, 404, 405) are Unmatched, so paths a scanner
// invents never become labels.
func template(status int, path string) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
		return Unmatched
	}
	if strings.HasPrefix(path, "/files/") {
		return "/files/{key}"
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) > 8 {
		return Unmatched
	}
	for i, seg := range segs {
		if !plainWord(seg) {
			segs[i] = "{id}"
		}
	}
	return "/" + strings.Join(segs, "/")
}

// plainWord: lower-case letters, digits, dots and dashes, starting with a letter, at
// most 32 long, and not a long token with digits in it (a model slug like image-4b is a
// word; a request id is not).
func plainWord(s string) bool {
	if s == "" || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	digits := 0
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r == '-', r == '.':
		case r >= '0' && r <= '9':
			digits++
		default:
			return false
		}
	}
	return digits == 0 || len(s) <= 16 && digits <= 3
}
