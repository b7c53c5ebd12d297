package blobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// LinkTTL is how long a signed link stays valid (spec 02, Limits: signed links 15 minutes).
const LinkTTL = 15 * time.Minute

// Methods a link may be signed for.
const (
	MethodGet = "GET"
	MethodPut = "PUT"
)

// URLSigner makes signed links to one file. Both the local HMAC Signer and the S3
// BucketSigner implement it, so uploads and asset reads do not care where files live.
type URLSigner interface {
	// SignGet returns a link that reads key until the returned expiry.
	SignGet(ctx context.Context, key string) (link string, expires time.Time, err error)
	// SignPut returns a link that writes key with exactly contentType, at most maxBytes
	// long, until the returned expiry.
	SignPut(ctx context.Context, key, contentType string, maxBytes int64) (link string, expires time.Time, err error)
}

// Reasons a signed link is refused. Each is a *LinkError; match with errors.Is.
var (
	ErrLinkMalformed   = &LinkError{Code: "signature_invalid", Reason: "malformed signed link"}
	ErrLinkSignature   = &LinkError{Code: "signature_invalid", Reason: "signature does not match"}
	ErrLinkExpired     = &LinkError{Code: "signature_expired", Reason: "signed link expired"}
	ErrLinkMethod      = &LinkError{Code: "method_not_signed", Reason: "link not signed for this method"}
	ErrLinkContentType = &LinkError{Code: "content_type_mismatch", Reason: "content type differs from the signed one"}
	ErrLinkTooLarge    = &LinkError{Code: "upload_too_large", Reason: "body larger than the signed maximum"}
	// ErrLinkUsed: an upload link writes its file once; a second PUT would replace bytes
	// that may already have been read, checked and charged for.
	ErrLinkUsed = &LinkError{Code: "link_used", Reason: "this upload link was already used; ask POST /v1/uploads for a new one"}
	// ErrBytesNotDeclaredType: the body does not look like the content type the link was
	// signed for (checked by magic numbers, see BytesMatchType).
	ErrBytesNotDeclaredType = &LinkError{Code: "unknown_content_type", Reason: "the bytes sent are not a file of the declared content type"}
)

// LinkError is a refused signed link.
type LinkError struct {
	Code   string
	Reason string
}

func (e *LinkError) Error() string { return "blobs: " + e.Reason }

// Signer signs and verifies the links the local backend serves itself
// ({base}/files/{key}?method=…&expires=…&ct=…&max=…&sig=…). The signature is
// HMAC-SHA256 under a deployment secret over method, key, expiry, content type and
// maximum size, so none of them can be changed without breaking it.
type Signer struct {
	secret []byte
	base   string // e.g. https://api.example.com/files/
	ttl    time.Duration
	now    func() time.Time
}

var _ URLSigner = (*Signer)(nil)

// NewSigner returns a Signer for links under publicBase (the absolute URL the files route
// is mounted at, such as "http://127.0.0.1:8080/files"). now is the clock (nil: time.Now).
func NewSigner(secret []byte, publicBase string, now func() time.Time) (*Signer, error) {
	if len(secret) < 16 {
		return nil, errors.New("blobs: signing secret must be at least 16 bytes")
	}
	u, err := url.Parse(publicBase)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("blobs: public base %q is not an absolute http(s) URL", publicBase)
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{secret: append([]byte(nil), secret...), base: strings.TrimRight(publicBase, "/") + "/", ttl: LinkTTL, now: now}, nil
}

// Base is the URL prefix every link of this signer starts with (ends in "/").
func (s *Signer) Base() string { return s.base }

// Grant is what a link allows.
type Grant struct {
	Method      string // GET or PUT
	Key         string
	ContentType string // PUT: the only Content-Type accepted; GET: empty
	MaxBytes    int64  // PUT: the largest body accepted; GET: 0
	Expires     time.Time
}

// SignGet signs a read link valid for LinkTTL.
func (s *Signer) SignGet(_ context.Context, key string) (string, time.Time, error) {
	if err := CheckKey(key); err != nil {
		return "", time.Time{}, err
	}
	g := Grant{Method: MethodGet, Key: key, Expires: s.now().Add(s.ttl).Truncate(time.Second)}
	return s.Link(g), g.Expires, nil
}

// SignPut signs a write link valid for LinkTTL.
func (s *Signer) SignPut(_ context.Context, key, contentType string, maxBytes int64) (string, time.Time, error) {
	if err := CheckKey(key); err != nil {
		return "", time.Time{}, err
	}
	if contentType == "" || maxBytes <= 0 {
		return "", time.Time{}, errors.New("blobs: a write link needs a content type and a size limit")
	}
	g := Grant{Method: MethodPut, Key: key, ContentType: contentType, MaxBytes: maxBytes, Expires: s.now().Add(s.ttl).Truncate(time.Second)}
	return s.Link(g), g.Expires, nil
}

// Link returns the signed link of g.
func (s *Signer) Link(g Grant) string {
	q := Query{Method: g.Method, Expires: g.Expires.Unix(), ContentType: g.ContentType, MaxBytes: g.MaxBytes}
	q.Sig = s.sign(g.Method, g.Key, q.Expires, g.ContentType, g.MaxBytes)
	return s.base + EscapeKey(g.Key) + "?" + q.Encode()
}

func (s *Signer) sign(method, key string, expires int64, contentType string, maxBytes int64) string {
	m := hmac.New(sha256.New, s.secret)
	// Length-prefixed fields: no two different tuples give the same message.
	for _, f := range []string{"modelexec-blob-v1", method, key, strconv.FormatInt(expires, 10), contentType, strconv.FormatInt(maxBytes, 10)} {
		fmt.Fprintf(m, "%d:%s\n", len(f), f)
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Query is the signed part of a link's query string.
type Query struct {
	Method      string
	Expires     int64
	ContentType string
	MaxBytes    int64
	Sig         string
}

// Encode writes q as a query string.
func (q Query) Encode() string {
	v := url.Values{}
	v.Set("method", q.Method)
	v.Set("expires", strconv.FormatInt(q.Expires, 10))
	if q.ContentType != "" {
		v.Set("ct", q.ContentType)
	}
	if q.MaxBytes > 0 {
		v.Set("max", strconv.FormatInt(q.MaxBytes, 10))
	}
	v.Set("sig", q.Sig)
	return v.Encode()
}

// ParseQuery reads the signed fields of a link's query.
func ParseQuery(v url.Values) (Query, error) {
	q := Query{Method: v.Get("method"), ContentType: v.Get("ct"), Sig: v.Get("sig")}
	var err error
	if q.Expires, err = strconv.ParseInt(v.Get("expires"), 10, 64); err != nil {
		return Query{}, ErrLinkMalformed
	}
	if m := v.Get("max"); m != "" {
		if q.MaxBytes, err = strconv.ParseInt(m, 10, 64); err != nil || q.MaxBytes < 0 {
			return Query{}, ErrLinkMalformed
		}
	}
	if q.Method == "" || q.Sig == "" {
		return Query{}, ErrLinkMalformed
	}
	return q, nil
}

// Request is one use of a link: what the caller actually does with it.
type Request struct {
	Method      string // HTTP method used (HEAD counts as GET)
	Key         string
	ContentType string // PUT: the request's Content-Type
	Size        int64  // PUT: the declared body size (-1 when unknown; the body is then capped at the maximum)
	Query       Query
}

// Verify checks the signature of r's link and then that r stays inside it: the method
// it was signed for, not expired at now, the signed content type and at most the signed
// size. The signature is compared in constant time. Errors are *LinkError values.
func (s *Signer) Verify(r Request, now time.Time) error {
	q := r.Query
	want := s.sign(q.Method, r.Key, q.Expires, q.ContentType, q.MaxBytes)
	if !hmac.Equal([]byte(want), []byte(q.Sig)) {
		return ErrLinkSignature
	}
	if !now.Before(time.Unix(q.Expires, 0)) {
		return ErrLinkExpired
	}
	method := r.Method
	if method == "HEAD" {
		method = MethodGet
	}
	if method != q.Method {
		return ErrLinkMethod
	}
	if q.Method == MethodPut {
		if !sameMediaType(r.ContentType, q.ContentType) {
			return ErrLinkContentType
		}
		if r.Size > q.MaxBytes {
			return ErrLinkTooLarge
		}
	}
	return nil
}

// VerifyURL checks a whole link (as the fetcher meets it) for a read: it answers the key
// when raw is a GET link of this signer that is valid at now. ok is false when raw is not
// a link of this signer at all.
func (s *Signer) VerifyURL(raw string, now time.Time) (key string, ok bool, err error) {
	if !strings.HasPrefix(raw, s.base) {
		return "", false, nil
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return "", true, ErrLinkMalformed
	}
	base, _ := url.Parse(s.base)
	key, err = KeyFromPath(u.EscapedPath(), base.EscapedPath())
	if err != nil {
		return "", true, err
	}
	q, err := ParseQuery(u.Query())
	if err != nil {
		return "", true, err
	}
	return key, true, s.Verify(Request{Method: MethodGet, Key: key, Query: q}, now)
}

// KeyFromPath returns the key of an escaped request path under prefix (which ends in "/").
func KeyFromPath(escapedPath, prefix string) (string, error) {
	if !strings.HasPrefix(escapedPath, prefix) {
		return "", ErrLinkMalformed
	}
	key, err := url.PathUnescape(strings.TrimPrefix(escapedPath, prefix))
	if err != nil || CheckKey(key) != nil {
		return "", ErrLinkMalformed
	}
	return key, nil
}

// EscapeKey path-escapes each segment of key.
func EscapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func sameMediaType(got, want string) bool {
	base := func(s string) string {
		if i := strings.IndexByte(s, ';'); i >= 0 {
			s = s[:i]
		}
		return strings.ToLower(strings.TrimSpace(s))
	}
	return want != "" && base(got) == base(want)
}

// BucketSigner presigns links with the bucket's own mechanism (S3 presigned URLs).
// S3 enforces the method, expiry and, on PUT, the Content-Type; it cannot enforce a size
// limit on a presigned PUT, so readers of uploads cap what they read (the fetcher does).
type BucketSigner struct {
	Bucket *Bucket // an S3 bucket (OpenBucket with s3://…)
	Now    func() time.Time
}

var _ URLSigner = BucketSigner{}

func (b BucketSigner) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

var errNotPresignable = errors.New("blobs: only an S3 bucket presigns its own links; use Signer for local files")

// SignGet presigns a read link.
func (b BucketSigner) SignGet(ctx context.Context, key string) (string, time.Time, error) {
	if err := CheckKey(key); err != nil {
		return "", time.Time{}, err
	}
	if b.Bucket == nil || b.Bucket.s3 == nil {
		return "", time.Time{}, errNotPresignable
	}
	exp := b.now().Add(LinkTTL)
	u, err := b.Bucket.s3.presignGet(ctx, key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("blobs: presign %s: %w", key, err)
	}
	return u, exp, nil
}

// SignPut presigns a write link bound to contentType.
func (b BucketSigner) SignPut(ctx context.Context, key, contentType string, _ int64) (string, time.Time, error) {
	if err := CheckKey(key); err != nil {
		return "", time.Time{}, err
	}
	if b.Bucket == nil || b.Bucket.s3 == nil {
		return "", time.Time{}, errNotPresignable
	}
	exp := b.now().Add(LinkTTL)
	u, err := b.Bucket.s3.presignPut(ctx, key, contentType)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("blobs: presign %s: %w", key, err)
	}
	return u, exp, nil
}
