package queueapi_test

import (
	"net/http/httptest"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/queueapi"
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
		_, err := queueapi.ParseOptions(r, m)
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
