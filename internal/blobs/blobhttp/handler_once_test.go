package blobhttp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
)

// TestUploadLinkWritesOnce: a signed upload link stores one file. A second PUT, even
// of the same bytes, is refused (409 invalid_url) and the first file stays; of two PUTs
// racing, exactly one lands. (ACC-16: the link is for one upload.)
func TestUploadLinkWritesOnce(t *testing.T) {
	_, up, _, _ := setup(t)
	slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	first := imageFile(t, "image/png", 1)
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", bytes.NewReader(first)); r.StatusCode != 200 {
		t.Fatalf("first PUT: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "PUT", slot.UploadURL, "image/png", bytes.NewReader(imageFile(t, "image/png", 2))); r.StatusCode != 410 || code(t, b) != "expired" || !strings.Contains(b, "link_used") {
		t.Fatalf("second PUT: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, "GET", slot.ReadURL, "", nil); r.StatusCode != 200 || b != string(first) {
		t.Fatalf("after a refused second PUT: %d %q", r.StatusCode, b)
	}

	race, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	statuses := make([]int, 6)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := do(t, "PUT", race.UploadURL, "image/png", bytes.NewReader(first))
			statuses[i] = r.StatusCode
		}()
	}
	wg.Wait()
	ok, conflict := 0, 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 410:
			conflict++
		}
	}
	if ok != 1 || conflict != len(statuses)-1 {
		t.Fatalf("racing PUTs answered %v; want one 200 and the rest 410", statuses)
	}
}

// TestUploadBytesMustMatchType: bytes that are not the declared type are refused with
// unknown_content_type and nothing is stored (HTML cannot be served later as image/png),
// also when they open with the type's signature (the whole file is decoded before it is
// kept: a PNG signature followed by HTML, a cut-off PNG); a failed PUT does not spend the
// link. (ACC-17: only png, jpeg and webp files.)
func TestUploadBytesMustMatchType(t *testing.T) {
	_, up, _, store := setup(t)
	for _, tc := range []struct {
		ct   string
		body []byte
		good []byte
	}{
		{"image/png", []byte("<html><script>alert(1)</script></html>"), imageFile(t, "image/png", 1)},
		{"image/jpeg", imageFile(t, "image/png", 1), imageFile(t, "image/jpeg", 1)},
		{"image/webp", []byte("RIFF\x10\x00\x00\x00WAVEfmt "), imageFile(t, "image/webp", 1)},
		{"image/png", nil, imageFile(t, "image/png", 2)},
		// A valid signature followed by something else: only a full decode tells.
		{"image/png", []byte("\x89PNG\r\n\x1a\n<html><script>alert(1)</script></html>"), imageFile(t, "image/png", 3)},
		{"image/png", imageFile(t, "image/png", 4)[:40], imageFile(t, "image/png", 4)},
		{"image/png", append(imageFile(t, "image/png", 5), "<html><script>alert(1)</script></html>"...), imageFile(t, "image/png", 5)},
		{"image/webp", append(imageFile(t, "image/webp", 3), "<html></html>"...), imageFile(t, "image/webp", 3)},
		{"image/jpeg", append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, "<html><body>hi</body></html>"...), imageFile(t, "image/jpeg", 2)},
		{"image/webp", []byte("RIFF\x24\x00\x00\x00WEBPVP8 <html><body>hi</body></html>"), imageFile(t, "image/webp", 2)},
	} {
		slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: tc.ct})
		if err != nil {
			t.Fatal(err)
		}
		if r, b := do(t, "PUT", slot.UploadURL, tc.ct, bytes.NewReader(tc.body)); r.StatusCode != 400 || code(t, b) != "unknown_content_type" {
			t.Errorf("%s with other bytes: %d %s", tc.ct, r.StatusCode, b)
		}
		if _, err := store.Stat(context.Background(), slot.Path); err == nil {
			t.Errorf("%s: refused bytes were stored", tc.ct)
		}
		if r, b := do(t, "PUT", slot.UploadURL, tc.ct, bytes.NewReader(tc.good)); r.StatusCode != 200 {
			t.Errorf("%s with its own bytes after a refusal: %d %s", tc.ct, r.StatusCode, b)
		}
	}
}

// withChunk appends a RIFF chunk (an odd length, so with its pad byte) to a WebP file and
// raises the container's size to match, as a camera or an editor writing EXIF does.
func withChunk(file []byte, fourCC string, data []byte) []byte {
	out := append([]byte(nil), file...)
	out = append(out, fourCC...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(data)))
	out = append(out, data...)
	if len(data)%2 == 1 {
		out = append(out, 0)
	}
	binary.LittleEndian.PutUint32(out[4:8], uint32(len(out)-8))
	return out
}

// A valid WebP carrying metadata after its image (an EXIF chunk, padded to an even length)
// was refused as "not a readable image/webp file": the check wanted the decoder to read
// every byte, and it stops after the image. The file must now end where its RIFF container
// says, so what lies inside is taken and what follows it is not.
func TestUploadWebPWithMetadataIsTaken(t *testing.T) {
	_, up, _, _ := setup(t)
	exif := withChunk(imageFile(t, "image/webp", 7), "EXIF", []byte("Exif\x00"))
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
	}{
		{"an EXIF chunk inside the container", exif, 200},
		{"bytes after the container's end", append(append([]byte(nil), exif...), "<html>"...), 400},
		{"a container that says it is longer than the file", exif[:len(exif)-2], 400},
	} {
		slot, err := up.Create(context.Background(), "acc_1", blobs.UploadRequest{ContentType: "image/webp"})
		if err != nil {
			t.Fatal(err)
		}
		if r, b := do(t, "PUT", slot.UploadURL, "image/webp", bytes.NewReader(tc.body)); r.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, r.StatusCode, b, tc.status)
		}
	}
}
