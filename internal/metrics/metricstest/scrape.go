// Package metricstest reads a /metrics exposition the way Prometheus does, for tests.
package metricstest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape GETs /metrics from h and parses it with Prometheus's text parser: counters and gauges
// by value, histograms by sample count, keyed name{label=value,...} (labels as exposed,
// sorted). A status other than 200 or an exposition that does not parse fails the test.
func Scrape(t testing.TB, h http.Handler) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case s.Counter != nil:
				out[key] = s.Counter.GetValue()
			case s.Gauge != nil:
				out[key] = s.Gauge.GetValue()
			case s.Histogram != nil:
				out[key] = float64(s.Histogram.GetSampleCount())
			}
		}
	}
	return out
}
