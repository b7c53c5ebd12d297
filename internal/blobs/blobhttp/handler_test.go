package blobhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/blobs/blobhttp"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func setup(t *testing.T) (*httptest.Server, *blobs.Uploader, *clock, blobs.Store) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s, err := blobs.NewSigner([]byte("0123456789abcdef-deployment"), srv.URL+"/files", c.now)
	if err != nil {
		t.Fatal(err)
	}
	store := blobs.NewMemory()
	mux.Handle("/files/", blobhttp.New(store, s, c.now, nil))
	return srv, &blobs.Uploader{Signer: s, MaxBytes: 1024}, c, store
}

func do(t *testing.T, method, url, ct string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func code(t *testing.T, body string) string {
	var m struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return m.Error
}

// TestUploadPutGet: upload slot → PUT bytes → GET them back with the stored content type;
// misuse of the links is refused. Proves ACC-16 end to end and the signed-link checks
// (after 15 minutes, wrong method, other content type, over the size).
func TestUploadPutGet(t *testing.T) {
	_, up, c, _ := setup(t)
	slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	png := imageFile(t, "image/png", 1)

	if r, b := do(t, "PUT", slot.UploadURL, "image/jpeg", bytes.NewReader(png)); r.StatusCode != 400 || code(t, b) != "unknown_content_type" {
		t.Fatalf("other content type: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", bytes.NewReader(make([]byte, 1025))); r.StatusCode != 413 || code(t, b) != "body_too_large" {
		t.Fatalf("too large: %d %s", r.StatusCode, b)
	}
	// A chunked body (no Content-Length) over the limit is cut at the limit.
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", io.MultiReader(bytes.NewReader(png), bytes.NewReader(make([]byte, 600)), bytes.NewReader(make([]byte, 600)))); r.StatusCode != 413 {
		t.Fatalf("chunked too large: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "POST", slot.UploadURL, "image/png", bytes.NewReader(png)); r.StatusCode != 405 {
		t.Fatalf("POST: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "GET", slot.UploadURL, "", nil); r.StatusCode != 405 || code(t, b) != "method_not_allowed" {
		t.Fatalf("GET with the PUT link: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", bytes.NewReader(png)); r.StatusCode != 200 {
		t.Fatalf("PUT: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "PUT", slot.ReadURL, "image/png", bytes.NewReader(png)); r.StatusCode != 405 {
		t.Fatalf("PUT with the read link: %d %s", r.StatusCode, b)
	}
	r, b := do(t, "GET", slot.ReadURL, "", nil)
	if r.StatusCode != 200 || b != string(png) || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET: %d %q %s", r.StatusCode, b, r.Header.Get("Content-Type"))
	}
	if r, b := do(t, "GET", strings.Replace(slot.ReadURL, "sig=", "sig=x", 1), "", nil); r.StatusCode != 404 || code(t, b) != "not_found" {
		t.Fatalf("bad sig: %d %s", r.StatusCode, b)
	}
	c.t = c.t.Add(15 * time.Minute)
	if r, b := do(t, "GET", slot.ReadURL, "", nil); r.StatusCode != 410 || code(t, b) != "expired" {
		t.Fatalf("after 15 minutes: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", bytes.NewReader(png)); r.StatusCode != 410 || code(t, b) != "expired" {
		t.Fatalf("PUT after 15 minutes: %d %s", r.StatusCode, b)
	}
}

func TestMissingFileAndBadPath(t *testing.T) {
	srv, up, _, _ := setup(t)
	slot, _ := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if r, _ := do(t, "GET", slot.ReadURL, "", nil); r.StatusCode != 404 {
		t.Fatalf("missing: %d", r.StatusCode)
	}
	if r, _ := do(t, "GET", srv.URL+"/files/../etc/passwd?method=GET&expires=1&sig=x", "", nil); r.StatusCode != 404 {
		t.Fatalf("traversal: %d", r.StatusCode)
	}
	if r, b := do(t, "GET", srv.URL+"/files/uploads/a.png", "", nil); r.StatusCode != 404 || code(t, b) != "not_found" {
		t.Fatalf("unsigned: %d %s", r.StatusCode, b)
	}
}

// TestACC16_UploadCutShortIsTheSendersFault: a PUT whose body stops before its declared
// Content-Length is answered 400 invalid_body (the sender's fault, not a server error), stores
// nothing, says the same PUT may be sent again, and the link still takes the whole file.
func TestACC16_UploadCutShortIsTheSendersFault(t *testing.T) {
	srv, up, _, _ := setup(t)
	up.MaxBytes = 1 << 20
	slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	png := imageFile(t, "image/png", 1)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	u, _ := url.Parse(slot.UploadURL)
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, len(png)+1000)
	_, _ = conn.Write(png[:len(png)/2])
	_ = conn.(*net.TCPConn).CloseWrite()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || code(t, string(b)) != "invalid_body" || !strings.Contains(string(b), "Content-Length") {
		t.Fatalf("cut short: %d %s", res.StatusCode, b)
	}
	// The same PUT, whole, succeeds: the answer says so (retry same_key), never "a retry
	// cannot help" (x-should-retry: false).
	var body struct{ Retry string }
	_ = json.Unmarshal(b, &body)
	if body.Retry != "same_key" || res.Header.Get("x-should-retry") != "" {
		t.Fatalf("cut short: retry %q, x-should-retry %q", body.Retry, res.Header.Get("x-should-retry"))
	}
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", bytes.NewReader(png)); r.StatusCode != 200 {
		t.Fatalf("the whole file after a cut: %d %s", r.StatusCode, b)
	}
}

// TestACC16_ImageOverThePixelLimitSaysSo: an image whose header declares more pixels than an
// upload may hold is refused from its header with a message that names its size and the limit.
func TestACC16_ImageOverThePixelLimitSaysSo(t *testing.T) {
	_, up, _, _ := setup(t)
	slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	ihdr := append([]byte("IHDR"), 0, 0, 0x1b, 0x58, 0, 0, 0x1b, 0x58, 8, 6, 0, 0, 0) // 7000 × 7000, RGBA
	var png bytes.Buffer
	png.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&png, binary.BigEndian, uint32(13))
	png.Write(ihdr)
	_ = binary.Write(&png, binary.BigEndian, crc32.ChecksumIEEE(ihdr))
	png.Write(make([]byte, 200))
	r, b := do(t, "PUT", slot.UploadURL, "image/png", &png)
	if r.StatusCode != 400 || code(t, b) != "unknown_content_type" || !strings.Contains(b, "7000 × 7000 pixels") {
		t.Fatalf("a 49 Mpx image: %d %s", r.StatusCode, b)
	}
}

// A file whose type a browser would run (HTML, SVG: a model server names its outputs' types)
// is a download and sandboxed, never a page on the account API's origin; images are shown,
// sandboxed too.
func TestFilesNeverRunScriptOnTheAPIOrigin(t *testing.T) {
	_, up, _, store := setup(t)
	for i, c := range []struct {
		ct, disposition, csp string
	}{
		{"text/html; charset=utf-8", "attachment", "sandbox"},
		{"image/svg+xml", "attachment", "sandbox"},
		{"application/xhtml+xml", "attachment", "sandbox"},
		{"application/octet-stream", "attachment", "sandbox"},
		{"image/png", "", "sandbox"},
		{"audio/mpeg", "", "sandbox"},
		{"text/plain; charset=utf-8", "", "sandbox"},
		{"application/pdf", "", ""},
	} {
		key := fmt.Sprintf("outputs/req_1/file-%d.bin", i)
		if _, err := store.Put(context.Background(), key, c.ct, strings.NewReader("<script>alert(1)</script>")); err != nil {
			t.Fatal(err)
		}
		link, _, err := up.Signer.SignGet(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := do(t, "GET", link, "", nil)
		if r.StatusCode != 200 || r.Header.Get("Content-Disposition") != c.disposition || r.Header.Get("Content-Security-Policy") != c.csp {
			t.Fatalf("%s: %d, Content-Disposition %q, CSP %q", c.ct, r.StatusCode, r.Header.Get("Content-Disposition"), r.Header.Get("Content-Security-Policy"))
		}
	}
}
