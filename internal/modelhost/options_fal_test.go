package modelhost_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/modelhost"
)

// queueingModel is image-4b made to offer a queue (as an operator's catalogue may).
func queueingModel(t *testing.T) *catalog.Model {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Model("image-4b")
	if !ok {
		t.Fatal("no image-4b in the catalogue")
	}
	q := *m
	q.Lifecycle.Queue = catalog.QueueOffers
	return &q
}

// TestSUB09_SUB15_SUB19_FalSpellings: fal's client spells the per-request webhook
// fal_webhook and the priority and timeout headers x-fal-queue-priority and
// x-fal-request-timeout; each is one more alias of ours (DESIGN 7: fal clients work
// unchanged), and two spellings that disagree are conflicting_options.
func TestSUB09_SUB15_SUB19_FalSpellings(t *testing.T) {
	m := queueingModel(t)
	r := httptest.NewRequest("POST", "/svc-serverless/"+m.Slug+"?fal_webhook=https%3A%2F%2Fhooks.example.com%2Ffal", nil)
	r.Header.Set("x-fal-queue-priority", "low")
	r.Header.Set("x-fal-request-timeout", "30")
	o, err := modelhost.ParseOptions(r, m)
	if err != nil {
		t.Fatal(err)
	}
	if o.Webhook != "https://hooks.example.com/fal" || o.Priority != jobs.Low || o.RequestTimeout != 30*time.Second {
		t.Fatalf("fal spellings read as %+v", o)
	}

	for _, c := range []struct {
		query string
		hdr   map[string]string
	}{
		{"webhook=https%3A%2F%2Fa.example.com&fal_webhook=https%3A%2F%2Fb.example.com", nil},
		{"alt_webhook=https%3A%2F%2Fa.example.com&fal_webhook=https%3A%2F%2Fb.example.com", nil},
		{"", map[string]string{"X-Svc-Priority": "low", "x-fal-queue-priority": "normal"}},
		{"", map[string]string{"X-Alt-Request-Timeout": "5", "x-fal-request-timeout": "6"}},
	} {
		r := httptest.NewRequest("POST", "/svc-serverless/"+m.Slug+"?"+c.query, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		_, err := modelhost.ParseOptions(r, m)
		if e, ok := apierr.As(err); !ok || e.Code != apierr.ConflictingOptions {
			t.Errorf("%s %v: %v, want conflicting_options", c.query, c.hdr, err)
		}
	}

	// The same value under two spellings is one option, not a conflict.
	r = httptest.NewRequest("POST", "/svc-serverless/"+m.Slug+"?webhook=https%3A%2F%2Fa.example.com&fal_webhook=https%3A%2F%2Fa.example.com", nil)
	if _, err := modelhost.ParseOptions(r, m); err != nil {
		t.Fatalf("same webhook twice: %v", err)
	}

	// fal_webhook is checked like webhook: a loopback host is refused, not ignored.
	r = httptest.NewRequest("POST", "/svc-serverless/"+m.Slug+"?fal_webhook=https%3A%2F%2F127.0.0.1%2Fhook", nil)
	if e, ok := apierr.As(func() error { _, err := modelhost.ParseOptions(r, m); return err }()); !ok || e.Code != apierr.InvalidURL {
		t.Fatalf("fal_webhook on loopback: %v, want invalid_url", e)
	}
}

// TestSUB16_FalDefaultPriorityOnNonQueueingModel: fal's client sends
// x-fal-queue-priority: normal on every submit; on a model that does not queue that default
// is not a request for a priority and is accepted, while low (chosen) is queue_not_offered
// naming fal's spelling.
func TestSUB16_FalDefaultPriorityOnNonQueueingModel(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	if m.Lifecycle.Queue == catalog.QueueOffers {
		t.Fatal("image-4b offers a queue; pick a model that does not")
	}
	r := httptest.NewRequest("POST", "/svc-serverless/image-4b", nil)
	r.Header.Set("x-fal-queue-priority", "normal")
	if o, err := modelhost.ParseOptions(r, m); err != nil || o.Priority != "" {
		t.Fatalf("fal default priority on a non-queueing model: %+v %v", o, err)
	}
	r = httptest.NewRequest("POST", "/svc-serverless/image-4b", nil)
	r.Header.Set("x-fal-queue-priority", "low")
	_, err = modelhost.ParseOptions(r, m)
	if e, ok := apierr.As(err); !ok || e.Code != apierr.QueueNotOffered || e.Fields["option"] != "X-Fal-Queue-Priority" {
		t.Fatalf("fal low priority on a non-queueing model: %v", err)
	}
}
