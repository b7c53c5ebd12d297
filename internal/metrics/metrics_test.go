package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/metrics"
	"github.com/modelexec/modelexec/internal/metrics/metricstest"
)

// scrape reads the exposition of m as Prometheus would, with its text parser.
func scrape(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	return metricstest.Scrape(t, m.Handler())
}

// TestRequestsBySurfaceRouteStatus: wrapped around a ServeMux, requests count under the
// pattern that answered; wrapped around a whole surface, under a template of the path,
// and paths refused without routing under "unmatched" (no label per invented path).
func TestRequestsBySurfaceRouteStatus(t *testing.T) {
	m := metrics.New()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	mux.HandleFunc("POST /svc-serverless/{slug}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(422) })
	direct := m.Middleware("account", mux)
	// A surface whose handlers see a copy of the request (as the real surfaces do).
	copying := m.Middleware("queue", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(r.Context()))
	}))
	for _, c := range []struct {
		h            http.Handler
		method, path string
	}{
		{direct, "GET", "/v1/jobs/photo_k1"},
		{direct, "GET", "/v1/jobs/photo_k2"},
		{copying, "POST", "/svc-serverless/image-4b"},
		{copying, "GET", "/wp-admin/setup.php"},
		{copying, "GET", "/another/invented/path"},
	} {
		c.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
	}
	got := scrape(t, m)
	for key, want := range map[string]float64{
		`modelexec_http_requests_total{route=GET /v1/jobs/{id},status=200,surface=account}`:      2,
		`modelexec_http_requests_total{route=/svc-serverless/image-4b,status=422,surface=queue}`: 1,
		`modelexec_http_requests_total{route=unmatched,status=404,surface=queue}`:                2,
		`modelexec_http_request_duration_seconds{route=GET /v1/jobs/{id},surface=account}`:       2,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	for key := range got {
		if strings.Contains(key, "wp-admin") || strings.Contains(key, "photo_k") {
			t.Errorf("a raw path became a label: %s", key)
		}
	}
}

// TestRecorderSeries: the domain-facing Recorder and scrape-time gauges show up as the
// series an operator dashboards.
func TestRecorderSeries(t *testing.T) {
	m := metrics.New()
	var rec metrics.Recorder = m
	rec.JobFinished("image-4b", "succeeded", 1500*time.Millisecond)
	rec.JobFinished("image-4b", "succeeded", time.Second)
	rec.JobFinished("music", "failed", time.Second)
	rec.CreditsCharged("photo", 12)
	rec.CreditsCharged("photo", 3)
	rec.CreditsRefunded("photo", 3)
	rec.WebhookDelivery("delivered", 1)
	rec.WebhookDelivery("failed", 2)
	rec.RateLimited("generate")
	depth := 7.0
	if err := m.GaugeFunc("modelexec_queue_depth", "Jobs waiting for a seat.", func() float64 { return depth }); err != nil {
		t.Fatal(err)
	}
	got := scrape(t, m)
	for key, want := range map[string]float64{
		`modelexec_jobs_total{model=image-4b,outcome=succeeded}`:           2,
		`modelexec_jobs_total{model=music,outcome=failed}`:                 1,
		`modelexec_job_duration_seconds{model=image-4b,outcome=succeeded}`: 2,
		`modelexec_credits_charged_total{product=photo}`:                   15,
		`modelexec_credits_refunded_total{product=photo}`:                  3,
		`modelexec_webhook_deliveries_total{outcome=delivered,step=1}`:     1,
		`modelexec_webhook_deliveries_total{outcome=failed,step=2}`:        1,
		`modelexec_rate_limited_total{bucket=generate}`:                    1,
		`modelexec_queue_depth{}`:                                          7,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if _, ok := got["go_goroutines{}"]; !ok {
		t.Error("no Go runtime series")
	}
	var _ metrics.Recorder = metrics.Nop{}
}
