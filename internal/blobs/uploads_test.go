package blobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
)

// TestACC16_UploadSlot: POST /v1/uploads answers a signed PUT link and a path.
// Proves ACC-16 (domain part) and the designed response shape.
func TestACC16_UploadSlot(t *testing.T) {
	s := newSigner(t, t0)
	u := &blobs.Uploader{Signer: s, NewID: func() string { return "u1" }}
	up, err := u.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/webp", Filename: "cat.webp", Product: "photo"})
	if err != nil {
		t.Fatal(err)
	}
	if up.Object != "upload" || up.Path != "uploads/acc_1/u1.webp" || up.Method != "PUT" ||
		up.Headers["Content-Type"] != "image/webp" || up.MaxBytes != blobs.DefaultUploadMaxBytes ||
		up.ExpiresAt != "2026-11-21T10:15:00Z" {
		t.Fatalf("upload %+v", up)
	}
	if !strings.HasPrefix(up.UploadURL, "http://127.0.0.1:8080/files/uploads/acc_1/u1.webp?") ||
		!strings.Contains(up.UploadURL, "method=PUT") || !strings.Contains(up.ReadURL, "method=GET") {
		t.Fatalf("links %s %s", up.UploadURL, up.ReadURL)
	}
	if key, ok, err := s.VerifyURL(up.ReadURL, t0); !ok || err != nil || key != up.Path {
		t.Fatalf("read link: %v %v %v", key, ok, err)
	}
	b, _ := json.Marshal(up)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, f := range []string{"object", "path", "upload_url", "method", "headers", "read_url", "content_type", "max_bytes", "expires_at"} {
		if _, ok := m[f]; !ok {
			t.Errorf("response lacks %s", f)
		}
	}
}

// TestACC17_UploadContentTypes: only image/png, image/jpeg, image/webp; any other is
// unknown_content_type carrying accepted. Proves ACC-17.
func TestACC17_UploadContentTypes(t *testing.T) {
	u := &blobs.Uploader{Signer: newSigner(t, time.Now())}
	for _, ct := range []string{"image/png", "image/jpeg", "IMAGE/JPEG", "image/webp"} {
		if _, err := u.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: ct}); err != nil {
			t.Errorf("%s refused: %v", ct, err)
		}
	}
	for _, ct := range []string{"", "image/gif", "text/html", "image/svg+xml", "audio/mpeg"} {
		_, err := u.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: ct})
		var ue *blobs.UnknownContentTypeError
		if !errors.As(err, &ue) || ue.Code() != "unknown_content_type" ||
			!reflect.DeepEqual(ue.Accepted, []string{"image/png", "image/jpeg", "image/webp"}) {
			t.Errorf("%q: %v", ct, err)
		}
	}
}

// TestBytesMatchType: magic numbers of the checked types; unknown media types refused,
// other types unchecked.
func TestBytesMatchType(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		head string
		want bool
	}{
		{"image/png", "\x89PNG\r\n\x1a\nIHDR", true},
		{"IMAGE/PNG; charset=x", "\x89PNG\r\n\x1a\n", true},
		{"image/png", "<!doctype html>", false},
		{"image/png", "", false},
		{"image/jpeg", "\xff\xd8\xff\xe1", true},
		{"image/jpeg", "GIF89a", false},
		{"image/webp", "RIFF\x00\x00\x00\x00WEBPVP8L", true},
		{"image/webp", "RIFF\x00\x00\x00\x00WAVEfmt ", false},
		{"audio/wav", "RIFF\x00\x00\x00\x00WAVEfmt ", true},
		{"audio/mpeg", "ID3\x04", true},
		{"audio/mpeg", "\xff\xfb\x90", true},
		{"audio/mpeg", "<html>", false},
		{"audio/flac", "fLaC", true},
		{"audio/ogg", "OggS", true},
		{"image/x-unknown", "anything", false},
		{"application/json", "{}", true},
	} {
		if got := blobs.BytesMatchType(tc.ct, []byte(tc.head)); got != tc.want {
			t.Errorf("BytesMatchType(%q, %q) = %v, want %v", tc.ct, tc.head, got, tc.want)
		}
	}
}
