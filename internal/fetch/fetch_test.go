package fetch_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/blobs/blobhttp"
	"github.com/modelexec/modelexec/internal/fetch"
)

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func kind(err error) fetch.Kind {
	var fe *fetch.Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return ""
}

func port(t *testing.T, srv *httptest.Server) uint16 {
	u, _ := url.Parse(srv.URL)
	p, _ := strconv.Atoi(u.Port())
	return uint16(p)
}

// TestPrivateTargetsRefusedAtDial: loopback, private, link-local, unique-local and
// IPv4-mapped targets are refused on the resolved address, names included.
// Proves the SSRF part of ACC-18 / issue 5 item 3.
func TestPrivateTargetsRefusedAtDial(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	p := port(t, srv)
	// Allow the test server's port so that the address, not the port, is what refuses.
	f := fetch.New(fetch.Config{Ports: []uint16{p, 80, 443}})
	ps := strconv.Itoa(int(p))
	for _, u := range []string{
		srv.URL,
		"http://localhost:" + ps + "/x",
		"http://[::1]:" + ps + "/",
		"http://[::ffff:127.0.0.1]:" + ps + "/",
		"http://10.0.0.1/",
		"http://192.168.1.1/",
		"http://172.16.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00::1]/",
		"http://[fe80::1]/",
		"http://0.0.0.0:" + ps + "/",
	} {
		_, _, err := f.Fetch(context.Background(), u)
		if kind(err) != fetch.KindForbidden {
			t.Errorf("%s: %v", u, err)
		}
	}
	if hits != 0 {
		t.Fatalf("guarded fetch reached the server %d times", hits)
	}
	// The default port list refuses other ports before any address check.
	if _, _, err := fetch.New(fetch.Config{}).Fetch(context.Background(), srv.URL); kind(err) != fetch.KindForbidden {
		t.Errorf("port: %v", err)
	}
}

func TestURLForm(t *testing.T) {
	f := fetch.New(fetch.Config{}, fetch.AllowLoopbackForTests())
	for _, u := range []string{"ftp://example.com/a.png", "file:///etc/passwd", "gopher://x", "http://user:pw@example.com/a", "/relative", "http://", "data:image/png;base64,AAAA"} {
		if _, _, err := f.Fetch(context.Background(), u); kind(err) != fetch.KindInvalidURL {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestRedirectToPrivateRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/meta":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/private":
			http.Redirect(w, r, "http://10.1.2.3:8080/x", http.StatusFound)
		case "/scheme":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer srv.Close()
	f := fetch.New(fetch.Config{}, fetch.AllowLoopbackForTests())
	for path, want := range map[string]fetch.Kind{"/meta": fetch.KindForbidden, "/private": fetch.KindForbidden, "/scheme": fetch.KindInvalidURL, "/loop": fetch.KindInvalidURL} {
		if _, _, err := f.Fetch(context.Background(), srv.URL+path); kind(err) != want {
			t.Errorf("%s: %v, want %s", path, err, want)
		}
	}
}

func TestSniffSizeStatusTimeout(t *testing.T) {
	jp := jpegBytes(t)
	block := make(chan struct{})
	defer close(block)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/lying.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(jp)
		case "/webp":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(append([]byte("RIFF\x10\x00\x00\x00WEBPVP8 "), make([]byte, 16)...))
		case "/html-as-png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("<html><body>hi</body></html>"))
		case "/big":
			_, _ = w.Write(make([]byte, 2048))
		case "/big-chunked":
			for i := 0; i < 4; i++ {
				_, _ = w.Write(make([]byte, 512))
				w.(http.Flusher).Flush()
			}
		case "/missing":
			http.NotFound(w, r)
		case "/slow":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		case "/empty":
		}
	}))
	defer srv.Close()
	f := fetch.New(fetch.Config{MaxBytes: 1024, Timeout: 100 * time.Millisecond}, fetch.AllowLoopbackForTests())
	ctx := context.Background()
	if data, ct, err := f.Fetch(ctx, srv.URL+"/lying.png"); err != nil || ct != "image/jpeg" || !bytes.Equal(data, jp) {
		t.Errorf("sniff jpeg: %q %v", ct, err)
	}
	if _, ct, err := f.Fetch(ctx, srv.URL+"/webp"); err != nil || ct != "image/webp" {
		t.Errorf("sniff webp: %q %v", ct, err)
	}
	if _, ct, err := f.Fetch(ctx, srv.URL+"/html-as-png"); err != nil || ct != "text/html" {
		t.Errorf("sniff html: %q %v", ct, err)
	}
	for path, want := range map[string]fetch.Kind{"/big": fetch.KindTooLarge, "/big-chunked": fetch.KindTooLarge, "/missing": fetch.KindStatus, "/slow": fetch.KindTimeout, "/empty": fetch.KindEmpty} {
		if _, _, err := f.Fetch(ctx, srv.URL+path); kind(err) != want {
			t.Errorf("%s: %v want %s", path, err, want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := f.Fetch(cctx, srv.URL+"/lying.png"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestACC18_SignedUploadLinkAsInput: the read link of an upload is read from the blob
// store after its signature is checked, without opening the guard to loopback; expired or
// tampered links are refused. Proves ACC-18 (fetch side).
func TestACC18_SignedUploadLinkAsInput(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	// Nothing listens on this base: a network fetch would fail.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	base := "http://" + ln.Addr().String() + "/files"
	ln.Close()
	signer, err := blobs.NewSigner([]byte("0123456789abcdef-secret"), base, clock)
	if err != nil {
		t.Fatal(err)
	}
	store := blobs.NewMemory()
	up := &blobs.Uploader{Signer: signer}
	slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	f := fetch.New(fetch.Config{}, fetch.WithBlobs(signer, store), fetch.WithClock(func() time.Time { return now }))
	if _, _, err := f.Fetch(context.Background(), slot.ReadURL); kind(err) != fetch.KindNotFound {
		t.Fatalf("before upload: %v", err)
	}
	pb := pngBytes(t)
	if _, err := blobs.PutBytes(context.Background(), store, slot.Path, "image/png", pb); err != nil {
		t.Fatal(err)
	}
	data, ct, err := f.Fetch(context.Background(), slot.ReadURL)
	if err != nil || ct != "image/png" || !bytes.Equal(data, pb) {
		t.Fatalf("read link: %q %v", ct, err)
	}
	if _, _, err := f.Fetch(context.Background(), slot.UploadURL); kind(err) != fetch.KindLink {
		t.Fatalf("write link as input: %v", err)
	}
	tampered := slot.ReadURL[:len(slot.ReadURL)-2] + "xx"
	if _, _, err := f.Fetch(context.Background(), tampered); kind(err) != fetch.KindLink {
		t.Fatalf("tampered: %v", err)
	}
	now = now.Add(15 * time.Minute)
	if _, _, err := f.Fetch(context.Background(), slot.ReadURL); kind(err) != fetch.KindLink {
		t.Fatalf("expired: %v", err)
	}
}

// TestACC18_UploadEndToEnd: POST /v1/uploads logic → PUT the bytes through the signed-link
// handler over HTTP → the read link fetched as a url input. Proves ACC-16 and ACC-18.
func TestACC18_UploadEndToEnd(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	signer, _ := blobs.NewSigner([]byte("0123456789abcdef-secret"), srv.URL+"/files", nil)
	store := blobs.NewMemory()
	mux.Handle("/files/", blobhttp.New(store, signer, nil, nil))
	slot, err := (&blobs.Uploader{Signer: signer}).Create(context.Background(), "acc_9", blobs.UploadRequest{ContentType: "image/jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	jp := jpegBytes(t)
	req, _ := http.NewRequest(slot.Method, slot.UploadURL, bytes.NewReader(jp))
	for k, v := range slot.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	// Production fetcher (no loopback allowance): the link is ours, so it reads the store.
	f := fetch.New(fetch.Config{}, fetch.WithBlobs(signer, store))
	data, ct, err := f.Fetch(context.Background(), slot.ReadURL)
	if err != nil || ct != "image/jpeg" || !bytes.Equal(data, jp) {
		t.Fatalf("fetch: %q %v", ct, err)
	}
	// Any other path on the same loopback host stays refused.
	if _, _, err := f.Fetch(context.Background(), srv.URL+"/other"); kind(err) != fetch.KindForbidden {
		t.Fatalf("loopback non-link: %v", err)
	}
}
