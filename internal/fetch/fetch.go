package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"code.dny.dev/ssrf"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/runners"
)

// Defaults of Config.
const (
	DefaultMaxBytes     = 20 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
)

// Config is the operator's part of the fetcher's settings.
type Config struct {
	MaxBytes     int64         // largest file read; 0: DefaultMaxBytes
	Timeout      time.Duration // whole fetch, connect to last byte; 0: DefaultTimeout
	MaxRedirects int           // 0: DefaultMaxRedirects
	Ports        []uint16      // ports a url may name; nil: 80 and 443
	UserAgent    string        // "": modelexec-fetch/1
}

// Kind classifies a fetch failure.
type Kind string

// Kinds of Error.
const (
	KindInvalidURL Kind = "invalid_url"    // not an absolute http(s) URL, or user-info in it
	KindForbidden  Kind = "forbidden_host" // the address dialled is private, loopback, … or the port is not allowed
	KindTooLarge   Kind = "too_large"      // over MaxBytes
	KindTimeout    Kind = "timeout"        // over Timeout
	KindStatus     Kind = "http_status"    // the server answered other than 2xx
	KindNetwork    Kind = "network"        // DNS, connection, TLS or read failure
	KindLink       Kind = "signed_link"    // one of our own signed links, refused (expired, tampered)
	KindNotFound   Kind = "not_found"      // one of our own signed links, file missing
	KindEmpty      Kind = "empty"          // zero bytes
)

// Error is a failed fetch. Match with errors.As and look at Kind.
type Error struct {
	Kind   Kind
	URL    string // redacted: no query
	Status int    // KindStatus: the HTTP status
	Err    error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("fetch %s: %s", e.URL, e.Kind)
	if e.Status != 0 {
		msg += fmt.Sprintf(" %d", e.Status)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Describe says why the fetch failed in words for the person who sent the URL: the kind, the
// status, the URL they sent, never the error chain behind it (it can name the service's own
// hosts and files).
func (e *Error) Describe() string {
	why := map[Kind]string{
		KindForbidden: "its host is not a public address",
		KindTooLarge:  "the file is larger than this service reads",
		KindTimeout:   "it did not answer in time",
		KindStatus:    fmt.Sprintf("the server answered %d", e.Status),
		KindNetwork:   "it could not be reached",
		KindLink:      "the signed link has expired or was altered",
		KindNotFound:  "no file is at this link",
		KindEmpty:     "the file is empty",
	}[e.Kind]
	if why == "" {
		why = string(e.Kind)
	}
	return fmt.Sprintf("%s could not be fetched: %s", e.URL, why)
}

// Option adjusts a Fetcher from Go code only.
type Option func(*Fetcher)

// WithBlobs makes links of signer read straight from store after the signature check.
func WithBlobs(signer *blobs.Signer, store blobs.Store) Option {
	return func(f *Fetcher) { f.signer, f.store = signer, store }
}

// WithClock sets the clock used to check signed links (nil: time.Now).
func WithClock(now func() time.Time) Option {
	return func(f *Fetcher) {
		if now != nil {
			f.now = now
		}
	}
}

// AllowLoopbackForTests lets the guard through to 127.0.0.0/8 and ::1 on any port, so
// tests can fetch from httptest servers. It exists only as this Go option: no Config field,
// flag or environment variable turns it on.
func AllowLoopbackForTests() Option {
	return func(f *Fetcher) { f.loopback = true }
}

// Fetcher is the SSRF-safe runners.Inputs.
type Fetcher struct {
	cfg      Config
	client   *http.Client
	guard    *ssrf.Guardian
	signer   *blobs.Signer
	store    blobs.Store
	now      func() time.Time
	loopback bool
}

var _ runners.Inputs = (*Fetcher)(nil)

// New returns a Fetcher.
func New(cfg Config, opts ...Option) *Fetcher {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "modelexec-fetch/1"
	}
	f := &Fetcher{cfg: cfg, now: time.Now}
	for _, o := range opts {
		o(f)
	}
	gopts := []ssrf.Option{}
	if len(cfg.Ports) > 0 {
		gopts = append(gopts, ssrf.WithPorts(cfg.Ports...))
	}
	if f.loopback {
		gopts = append(gopts,
			ssrf.WithAnyPort(),
			ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.0/8")),
			ssrf.WithAllowedV6Prefixes(netip.MustParsePrefix("::1/128")))
	}
	f.guard = ssrf.New(gopts...)
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: f.guard.Safe}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would be dialled instead of the target and bypass the guard
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	f.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= cfg.MaxRedirects {
				return redirectError{fmt.Errorf("stopped after %d redirects", len(via))}
			}
			// Each hop is dialled through the guard again; here only the form is checked.
			if err := checkURL(req.URL); err != nil {
				return redirectError{err}
			}
			return nil
		},
	}
	return f
}

// redirectError is a redirect the client refused to follow.
type redirectError struct{ err error }

func (e redirectError) Error() string { return "redirect: " + e.err.Error() }
func (e redirectError) Unwrap() error { return e.err }

func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("no host")
	}
	if u.User != nil {
		return errors.New("user-info is not allowed")
	}
	return nil
}

func redact(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return raw[:i]
	}
	return raw
}

// Fetch returns the bytes at raw and their sniffed content type.
func (f *Fetcher) Fetch(ctx context.Context, raw string) ([]byte, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", &Error{Kind: KindInvalidURL, URL: redact(raw), Err: err}
	}
	if err := checkURL(u); err != nil {
		return nil, "", &Error{Kind: KindInvalidURL, URL: redact(raw), Err: err}
	}
	if f.signer != nil {
		if key, ours, err := f.signer.VerifyURL(raw, f.now()); ours {
			if err != nil {
				return nil, "", &Error{Kind: KindLink, URL: redact(raw), Err: err}
			}
			return f.fromStore(ctx, raw, key)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", &Error{Kind: KindInvalidURL, URL: redact(raw), Err: err}
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "image/*, audio/*, */*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, "", f.classify(ctx, raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, "", &Error{Kind: KindStatus, URL: redact(raw), Status: resp.StatusCode}
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return nil, "", &Error{Kind: KindTooLarge, URL: redact(raw), Err: fmt.Errorf("%d bytes declared, limit %d", resp.ContentLength, f.cfg.MaxBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBytes+1))
	if err != nil {
		return nil, "", f.classify(ctx, raw, err)
	}
	if int64(len(data)) > f.cfg.MaxBytes {
		return nil, "", &Error{Kind: KindTooLarge, URL: redact(raw), Err: fmt.Errorf("over %d bytes", f.cfg.MaxBytes)}
	}
	if len(data) == 0 {
		return nil, "", &Error{Kind: KindEmpty, URL: redact(raw)}
	}
	return data, Sniff(data, resp.Header.Get("Content-Type")), nil
}

func (f *Fetcher) fromStore(ctx context.Context, raw, key string) ([]byte, string, error) {
	data, info, err := blobs.ReadAll(ctx, f.store, key, f.cfg.MaxBytes)
	switch {
	case errors.Is(err, blobs.ErrNotFound):
		return nil, "", &Error{Kind: KindNotFound, URL: redact(raw), Err: err}
	case errors.Is(err, blobs.ErrTooLarge):
		return nil, "", &Error{Kind: KindTooLarge, URL: redact(raw), Err: err}
	case err != nil:
		return nil, "", &Error{Kind: KindNetwork, URL: redact(raw), Err: err}
	case len(data) == 0:
		return nil, "", &Error{Kind: KindEmpty, URL: redact(raw)}
	}
	return data, Sniff(data, info.ContentType), nil
}

func (f *Fetcher) classify(ctx context.Context, raw string, err error) error {
	kind := KindNetwork
	switch {
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedPort), errors.Is(err, ssrf.ErrProhibitedNetwork):
		kind = KindForbidden
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		kind = KindTimeout
	case errors.Is(err, context.Canceled):
		return err // the caller cancelled: not a property of the url
	default:
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			kind = KindTimeout
		}
		var re redirectError
		if errors.As(err, &re) {
			kind = KindInvalidURL
		}
	}
	return &Error{Kind: kind, URL: redact(raw), Err: err}
}

// Sniff names the content type of data from its bytes. The declared type is used only
// when the bytes say nothing more specific than text or octet-stream.
func Sniff(data []byte, declared string) string {
	switch {
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "image/webp"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		return "audio/wav"
	case len(data) >= 4 && bytes.Equal(data[:4], []byte("fLaC")):
		return "audio/flac"
	case len(data) >= 36 && bytes.Equal(data[:4], []byte("OggS")) && bytes.Equal(data[28:36], []byte("OpusHead")):
		return "audio/ogg"
	}
	ct := http.DetectContentType(data)
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	if ct == "application/octet-stream" || strings.HasPrefix(ct, "text/plain") {
		if mt, _, err := mime.ParseMediaType(declared); err == nil && mt != "" && !strings.HasPrefix(mt, "image/") {
			// Never let a server's header make bytes that do not sniff as an image pass as one.
			return mt
		}
	}
	return ct
}
