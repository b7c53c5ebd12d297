package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"code.dny.dev/ssrf"
)

// Delivery limits (spec 02 "Retries and pausing" #1).
const (
	ConnectTimeout = 5 * time.Second
	TotalTimeout   = 10 * time.Second
	MaxAnswerRead  = 2048
	// MaxChallengeRead is how much of a challenge answer is searched for the nonce. The 2 KB
	// cap is the deliveries' (spec 02 "Retries and pausing" #1); the challenge passes with the
	// nonce anywhere in the body, an HTML page included, so it reads further.
	MaxChallengeRead = 64 << 10
	UserAgent        = "modelexec-webhooks/1 (+webhook sender)"
)

// Failure kinds of an attempt that got no HTTP answer.
const (
	FailTimeout    = "timeout"
	FailDNS        = "dns_failure"
	FailTLS        = "tls_failure"
	FailConnection = "connection_failed"
	FailBlocked    = "blocked_address" // the name resolved to a private address: never contacted
	FailURLRefused = "url_refused"     // the URL no longer passes the URL policy
)

// SenderConfig configures the HTTP client of deliveries and challenges.
type SenderConfig struct {
	Policy    URLPolicy      // zero value: production (public destinations only)
	RootCAs   *x509.CertPool // nil: the system roots
	UserAgent string         // "": UserAgent
	Resolver  *net.Resolver  // nil: the system resolver (every address it returns is checked when dialled)
}

// Sender POSTs signed bodies: 5 s to connect, 10 s in all, redirects never followed, at most
// 2 KB of the answer read, and every dialled address checked after resolution so a public
// name resolving to a private address is refused before any packet is sent.
type Sender struct {
	client *http.Client
	policy URLPolicy
	ua     string
}

// NewSender builds a Sender.
func NewSender(cfg SenderConfig) *Sender {
	dialer := &net.Dialer{Timeout: ConnectTimeout, Control: cfg.Policy.guardian().Safe, Resolver: cfg.Resolver}
	tr := &http.Transport{
		Proxy:                 nil, // an environment proxy would dial on our behalf, bypassing the address check
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   ConnectTimeout,
		ResponseHeaderTimeout: TotalTimeout,
		// An idle connection per engine worker and then some: a host taking many deliveries at
		// once keeps its connections rather than paying a TLS handshake per delivery.
		MaxIdleConnsPerHost: 4 * DefaultWorkers,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = UserAgent
	}
	return &Sender{
		client: &http.Client{
			Transport:     tr,
			Timeout:       TotalTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		policy: cfg.Policy,
		ua:     ua,
	}
}

// Answer is the outcome of one POST.
type Answer struct {
	StatusCode int    // 0 when no HTTP answer came
	Body       []byte // at most MaxAnswerRead bytes
	Failure    string // Fail* when StatusCode is 0
	Err        error
}

// Post sends body to rawURL with header (Content-Type and User-Agent are set here) and reads
// at most MaxAnswerRead bytes of the answer.
func (s *Sender) Post(ctx context.Context, rawURL string, header http.Header, body []byte) Answer {
	return s.post(ctx, rawURL, header, body, MaxAnswerRead)
}

// PostChallenge is Post for the registration challenge: it reads up to MaxChallengeRead.
func (s *Sender) PostChallenge(ctx context.Context, rawURL string, header http.Header, body []byte) Answer {
	return s.post(ctx, rawURL, header, body, MaxChallengeRead)
}

func (s *Sender) post(ctx context.Context, rawURL string, header http.Header, body []byte, maxRead int64) Answer {
	if err := s.policy.Validate(rawURL); err != nil {
		return Answer{Failure: FailURLRefused, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return Answer{Failure: FailURLRefused, Err: err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.ua)
	if id := header.Get("Svc-Delivery"); id != "" {
		// A delivery may be sent twice (receivers dedupe by Svc-Delivery), so the client may send
		// it again on a fresh connection when a kept-alive one turns out closed by the receiver.
		req.Header.Set("Idempotency-Key", id)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return Answer{Failure: classify(err), Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRead))
	if err != nil && classify(err) == FailTimeout {
		// The answer did not end within the 10 seconds in all: a timeout, whatever its status.
		return Answer{Failure: FailTimeout, Err: err}
	}
	return Answer{StatusCode: resp.StatusCode, Body: b}
}

func classify(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var netErr net.Error
	switch {
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedNetwork),
		errors.Is(err, ssrf.ErrProhibitedPort), errors.Is(err, ssrf.ErrInvalidHostPort):
		return FailBlocked
	case errors.As(err, &dnsErr):
		return FailDNS
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &invalidErr), errors.As(err, &recErr), errors.As(err, &alertErr):
		return FailTLS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailTimeout
	case strings.Contains(err.Error(), "tls:"):
		return FailTLS
	}
	return FailConnection
}
