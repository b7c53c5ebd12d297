package modelhost_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/modelhost"
)

// TestSUB13_QueueNotOfferedNamesTheSpellingSent: queue-only options on a model that refuses a
// queue are refused queue_not_offered naming the spelling the client sent, even when later
// options (priority, request timeout) are also present. Proves SUB-12, SUB-13, SUB-15, SUB-16, SUB-18.
func TestSUB13_QueueNotOfferedNamesTheSpellingSent(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	cases := []struct {
		query  string
		hdr    map[string]string
		option string
	}{
		{"max_queue_length=1", nil, "max_queue_length"},
		{"alt_max_queue_length=1", nil, "alt_max_queue_length"},
		{"alt_max_queue_length=1", map[string]string{"X-Svc-Request-Timeout": "5"}, "alt_max_queue_length"},
		{"", map[string]string{"X-Svc-Priority": "low"}, "X-Svc-Priority"},
		{"", map[string]string{"X-Alt-Queue-Priority": "low", "X-Alt-Request-Timeout": "5"}, "X-Alt-Queue-Priority"},
		{"", map[string]string{"X-Svc-Request-Timeout": "5"}, ""}, // accepted on a refusing model
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/svc-serverless/image-4b?"+c.query, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		_, err := modelhost.ParseOptions(r, m)
		if c.option == "" {
			if err != nil {
				t.Errorf("%s %v: %v", c.query, c.hdr, err)
			}
			continue
		}
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.QueueNotOffered || e.Fields["option"] != c.option {
			t.Errorf("%s %v: got %v, want queue_not_offered option %s", c.query, c.hdr, err, c.option)
		}
	}
}

// TestSUB25_OptionValuesOutOfRange: every query and header value outside its stated range or
// enum is refused before any charge (422 with detail on the queue host), "NaN" included (a
// float parser reads it as a number that compares false with both bounds); values at the
// edges are accepted. Proves SUB-05, SUB-07, SUB-11, SUB-17, SUB-19, SUB-25.
func TestSUB25_OptionValuesOutOfRange(t *testing.T) {
	queued := offeringModel(t)
	cases := []struct {
		query string
		hdr   map[string]string
		code  apierr.Code // "" when accepted
	}{
		{"wait=1", nil, ""},
		{"wait=300", nil, ""},
		{"wait=0", nil, apierr.InvalidWait},
		{"wait=301", nil, apierr.InvalidWait},
		{"wait=1.5", nil, apierr.InvalidWait},
		{"logs=true", nil, ""},
		{"logs=0", nil, ""},
		{"logs=yes", nil, apierr.InvalidInput},
		{"max_queue_length=0", nil, ""},
		{"max_queue_length=2147483647", nil, ""},
		{"max_queue_length=2147483648", nil, apierr.InvalidInput},
		{"alt_max_queue_length=-1", nil, apierr.InvalidInput},
		{"", map[string]string{"X-Svc-Request-Timeout": "1"}, ""},
		{"", map[string]string{"X-Svc-Request-Timeout": "86400"}, ""},
		{"", map[string]string{"X-Svc-Request-Timeout": "2.5"}, ""},
		{"", map[string]string{"X-Svc-Request-Timeout": "0.999"}, apierr.InvalidInput},
		{"", map[string]string{"X-Svc-Request-Timeout": "86400.5"}, apierr.InvalidInput},
		{"", map[string]string{"X-Svc-Request-Timeout": "NaN"}, apierr.InvalidInput},
		{"", map[string]string{"X-Alt-Request-Timeout": "nan"}, apierr.InvalidInput},
		{"", map[string]string{"X-Alt-Request-Timeout": "Inf"}, apierr.InvalidInput},
		{"", map[string]string{"X-Svc-Request-Timeout": "soon"}, apierr.InvalidInput},
		{"", map[string]string{"X-Svc-Priority": "high"}, apierr.InvalidInput},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/svc-serverless/x?"+c.query, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		o, err := modelhost.ParseOptions(r, &queued)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s %v: refused %v", c.query, c.hdr, err)
			}
			if o.RequestTimeout < 0 {
				t.Errorf("%s %v: request timeout %v", c.query, c.hdr, o.RequestTimeout)
			}
			continue
		}
		e, ok := apierr.As(err)
		if !ok || e.Code != c.code || len(e.Detail) == 0 {
			t.Errorf("%s %v: got %v, want %s with detail", c.query, c.hdr, err, c.code)
		}
	}
}

// TestSUB_RefusedHeaderNamesTheSpellingSent: a refused request timeout or priority names the
// header the caller sent (its loc and message), not another spelling of it.
func TestSUB25_RefusedHeaderNamesTheSpellingSent(t *testing.T) {
	queued := offeringModel(t)
	for name, v := range map[string]string{"X-Alt-Request-Timeout": "0", "X-Svc-Request-Timeout": "86401", "X-Alt-Queue-Priority": "high"} {
		r := httptest.NewRequest("POST", "/svc-serverless/x", nil)
		r.Header.Set(name, v)
		_, err := modelhost.ParseOptions(r, &queued)
		e, ok := apierr.As(err)
		if !ok || len(e.Detail) != 1 || e.Detail[0].Loc[1] != name || !strings.HasPrefix(e.Message, name+":") {
			t.Errorf("%s: %v: the refusal names another spelling (%+v)", name, err, e)
		}
	}
}

// offeringModel is image-4b as a model that offers a queue, so that every queue option applies.
func offeringModel(t *testing.T) catalog.Model {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	queued := *m
	queued.Lifecycle.Queue = catalog.QueueOffers
	return queued
}
