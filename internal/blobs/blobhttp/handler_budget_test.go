package blobhttp_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
)

// ACC-17: an upload is kept only when the service can read it. A 277 KB progressive CMYK JPEG
// of 4200 × 4200 would take Go's decoder 423 MB (24 bytes a pixel), more than one image may
// take: it is refused from its header with the figures and what would fit, nothing is kept
// and nothing like its decode is allocated; the link still takes a readable file.
func TestACC17_UploadTooCostlyToReadIsRefused(t *testing.T) {
	_, up, _, store := setup(t)
	up.MaxBytes = 1 << 20
	huge, err := os.ReadFile("../../imagebudget/testdata/huge_progcmyk.jpg")
	if err != nil {
		t.Fatal(err)
	}
	slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, b := do(t, "PUT", slot.UploadURL, "image/jpeg", bytes.NewReader(huge))
	runtime.ReadMemStats(&after)
	if r.StatusCode != 400 || code(t, b) != "unknown_content_type" {
		t.Fatalf("PUT: %d %s", r.StatusCode, b)
	}
	for _, want := range []string{"4200 × 4200 progressive CMYK JPEG", "404 MB", "384 MB", "megapixels"} {
		if !strings.Contains(b, want) {
			t.Errorf("the refusal does not say %q: %s", want, b)
		}
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
	if _, err := store.Stat(context.Background(), slot.Path); err == nil {
		t.Error("the refused file was kept")
	}
	if r, b := do(t, "PUT", slot.UploadURL, "image/jpeg", bytes.NewReader(imageFile(t, "image/jpeg", 1))); r.StatusCode != 200 {
		t.Fatalf("a readable file after the refusal: %d %s", r.StatusCode, b)
	}
}
