package blobs_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newSigner(t *testing.T, now time.Time) *blobs.Signer {
	t.Helper()
	s, err := blobs.NewSigner([]byte("0123456789abcdef-deployment"), "http://127.0.0.1:8080/files", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parse(t *testing.T, s *blobs.Signer, link string) (string, blobs.Query) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	key, err := blobs.KeyFromPath(u.EscapedPath(), "/files/")
	if err != nil {
		t.Fatal(err)
	}
	q, err := blobs.ParseQuery(u.Query())
	if err != nil {
		t.Fatal(err)
	}
	return key, q
}

// TestSignedLinkChecks proves that a signed link is refused after 15 minutes, with the
// wrong method, with another content type, over its size, or tampered with — not only
// on a bad signature. (ACC-11, ACC-16)
func TestSignedLinkChecks(t *testing.T) {
	s := newSigner(t, t0)
	ctx := context.Background()
	put, exp, err := s.SignPut(ctx, "uploads/acc_1/a.png", "image/png", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(t0.Add(15 * time.Minute)) {
		t.Fatalf("expiry %v", exp)
	}
	get, _, _ := s.SignGet(ctx, "uploads/acc_1/a.png")
	pk, pq := parse(t, s, put)
	gk, gq := parse(t, s, get)

	tamper := func(q blobs.Query, f func(*blobs.Query)) blobs.Query { f(&q); return q }
	cases := []struct {
		name string
		req  blobs.Request
		now  time.Time
		want error
	}{
		{"put ok", blobs.Request{Method: "PUT", Key: pk, ContentType: "image/png", Size: 1000, Query: pq}, t0, nil},
		{"put ok params", blobs.Request{Method: "PUT", Key: pk, ContentType: "image/png; charset=x", Size: -1, Query: pq}, t0.Add(14 * time.Minute), nil},
		{"put expired", blobs.Request{Method: "PUT", Key: pk, ContentType: "image/png", Size: 10, Query: pq}, t0.Add(15 * time.Minute), blobs.ErrLinkExpired},
		{"put other type", blobs.Request{Method: "PUT", Key: pk, ContentType: "image/jpeg", Size: 10, Query: pq}, t0, blobs.ErrLinkContentType},
		{"put no type", blobs.Request{Method: "PUT", Key: pk, Size: 10, Query: pq}, t0, blobs.ErrLinkContentType},
		{"put too large", blobs.Request{Method: "PUT", Key: pk, ContentType: "image/png", Size: 1001, Query: pq}, t0, blobs.ErrLinkTooLarge},
		{"put link used to read", blobs.Request{Method: "GET", Key: pk, Query: pq}, t0, blobs.ErrLinkMethod},
		{"get link used to write", blobs.Request{Method: "PUT", Key: gk, ContentType: "image/png", Size: 1, Query: gq}, t0, blobs.ErrLinkMethod},
		{"get ok", blobs.Request{Method: "GET", Key: gk, Query: gq}, t0, nil},
		{"head ok", blobs.Request{Method: "HEAD", Key: gk, Query: gq}, t0, nil},
		{"get expired", blobs.Request{Method: "GET", Key: gk, Query: gq}, t0.Add(16 * time.Minute), blobs.ErrLinkExpired},
		{"other key", blobs.Request{Method: "GET", Key: "uploads/acc_2/a.png", Query: gq}, t0, blobs.ErrLinkSignature},
		{"raised max", blobs.Request{Method: "PUT", Key: pk, ContentType: "image/png", Size: 5000, Query: tamper(pq, func(q *blobs.Query) { q.MaxBytes = 5000 })}, t0, blobs.ErrLinkSignature},
		{"changed type", blobs.Request{Method: "PUT", Key: pk, ContentType: "text/html", Size: 5, Query: tamper(pq, func(q *blobs.Query) { q.ContentType = "text/html" })}, t0, blobs.ErrLinkSignature},
		{"extended expiry", blobs.Request{Method: "GET", Key: gk, Query: tamper(gq, func(q *blobs.Query) { q.Expires += 3600 })}, t0, blobs.ErrLinkSignature},
		{"method swapped", blobs.Request{Method: "PUT", Key: gk, Query: tamper(gq, func(q *blobs.Query) { q.Method = "PUT" })}, t0, blobs.ErrLinkSignature},
	}
	for _, c := range cases {
		if err := s.Verify(c.req, c.now); !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%s: got %v want %v", c.name, err, c.want)
		}
	}
	other, _ := blobs.NewSigner([]byte("another-secret-0123456789"), "http://127.0.0.1:8080/files", func() time.Time { return t0 })
	if err := other.Verify(blobs.Request{Method: "GET", Key: gk, Query: gq}, t0); !errors.Is(err, blobs.ErrLinkSignature) {
		t.Errorf("other secret: %v", err)
	}
}

func TestVerifyURL(t *testing.T) {
	s := newSigner(t, t0)
	get, _, _ := s.SignGet(context.Background(), "uploads/acc_1/a.png")
	key, ok, err := s.VerifyURL(get, t0.Add(time.Minute))
	if !ok || err != nil || key != "uploads/acc_1/a.png" {
		t.Fatalf("VerifyURL: %q %v %v", key, ok, err)
	}
	if _, ok, err := s.VerifyURL(get, t0.Add(20*time.Minute)); !ok || !errors.Is(err, blobs.ErrLinkExpired) {
		t.Fatalf("expired: %v %v", ok, err)
	}
	if _, ok, _ := s.VerifyURL("https://example.com/files/x", t0); ok {
		t.Fatal("foreign url recognised as ours")
	}
	put, _, _ := s.SignPut(context.Background(), "uploads/acc_1/a.png", "image/png", 10)
	if _, ok, err := s.VerifyURL(put, t0); !ok || !errors.Is(err, blobs.ErrLinkMethod) {
		t.Fatalf("write link used as read: %v %v", ok, err)
	}
	if _, ok, err := s.VerifyURL(strings.Replace(get, "a.png", "..%2Fa.png", 1), t0); !ok || err == nil {
		t.Fatalf("escaped traversal: %v %v", ok, err)
	}
}

func TestNewSignerRefusesWeakConfig(t *testing.T) {
	if _, err := blobs.NewSigner([]byte("short"), "http://x/files", nil); err == nil {
		t.Error("short secret accepted")
	}
	if _, err := blobs.NewSigner([]byte("0123456789abcdef"), "/files", nil); err == nil {
		t.Error("relative base accepted")
	}
}
