package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
)

// storeSuite runs the same checks over every Store backend.
func storeSuite(t *testing.T, s blobs.Store) {
	ctx := context.Background()
	data := []byte("\x89PNG\r\n\x1a\nfake")
	info, err := s.Put(ctx, "uploads/acc_1/a.png", "image/png", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.ContentType != "image/png" {
		t.Fatalf("put info %+v", info)
	}
	st, err := s.Stat(ctx, "uploads/acc_1/a.png")
	if err != nil || st.Size != int64(len(data)) || st.ContentType != "image/png" {
		t.Fatalf("stat %+v %v", st, err)
	}
	rc, oi, err := s.Open(ctx, "uploads/acc_1/a.png")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data) || oi.ContentType != "image/png" {
		t.Fatalf("open: %q %+v", got, oi)
	}
	if _, _, err := blobs.ReadAll(ctx, s, "uploads/acc_1/a.png", 4); !errors.Is(err, blobs.ErrTooLarge) {
		t.Fatalf("ReadAll over limit: %v", err)
	}
	if _, err := s.Stat(ctx, "uploads/acc_1/missing.png"); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("stat missing: %v", err)
	}
	if _, _, err := s.Open(ctx, "uploads/acc_1/missing.png"); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("open missing: %v", err)
	}
	if err := s.Delete(ctx, "uploads/acc_1/a.png"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "uploads/acc_1/a.png"); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a/./b", "a b", "a\\b"} {
		if _, err := s.Put(ctx, bad, "text/plain", bytes.NewReader(nil)); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	for _, bad := range []string{".tmp/x", "a/.hidden", "a/b.png.attrs"} {
		if _, err := s.Put(ctx, bad, "text/plain", bytes.NewReader(nil)); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	createSuite(t, s)
	key, err := blobs.Outputs{Store: s, JobID: "music_k1"}.Put(ctx, "audio.mp3", "audio/mpeg", []byte("ID3"))
	if err != nil || key != "outputs/music_k1/audio.mp3" {
		t.Fatalf("outputs: %q %v", key, err)
	}
}

func TestStoreMemory(t *testing.T) { storeSuite(t, blobs.NewMemory()) }

func TestStoreFiles(t *testing.T) {
	b, err := blobs.OpenBucket(context.Background(), filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	storeSuite(t, b)
}

func TestStoreFileURL(t *testing.T) {
	b, err := blobs.OpenBucket(context.Background(), "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	storeSuite(t, b)
}

// TestS3Presign opens an S3-compatible bucket by URL and presigns links without any
// network traffic (presigning is local computation).
func TestS3Presign(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	ctx := context.Background()
	b, err := blobs.OpenBucket(ctx, "s3://files?endpoint=http://minio.example:9000&region=us-east-1&use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := blobs.BucketSigner{Bucket: b}
	put, _, err := s.SignPut(ctx, "uploads/acc_1/x.png", "image/png", 100)
	if err != nil {
		t.Fatal(err)
	}
	get, _, err := s.SignGet(ctx, "uploads/acc_1/x.png")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{put, get} {
		if !bytes.Contains([]byte(u), []byte("http://minio.example:9000/files/uploads/acc_1/x.png?")) ||
			!bytes.Contains([]byte(u), []byte("X-Amz-Signature=")) || !bytes.Contains([]byte(u), []byte("X-Amz-Expires=900")) {
			t.Errorf("presigned %s", u)
		}
	}
	if !bytes.Contains([]byte(put), []byte("content-type")) {
		t.Errorf("PUT link does not bind the content type: %s", put)
	}
}
