package blobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
)

// retentionSuite: a sweep deletes the outputs and uploads older than their retention and
// keeps the younger ones, the other prefixes, and everything a zero retention covers.
func retentionSuite(t *testing.T, b *blobs.Bucket) {
	ctx := context.Background()
	for _, k := range []string{"outputs/photo_k1/image-0.png", "outputs/photo_k2/image-0.png", "uploads/acc_1/u1.png", "studio/acc_1/brief"} {
		if _, err := blobs.PutBytes(ctx, b, k, "image/png", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Now()
	s := &blobs.Sweeper{Bucket: b, Retention: blobs.Retention{Outputs: 30 * 24 * time.Hour}, Log: log, Now: func() time.Time { return now }}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("a sweep of young files deleted %d: %v", n, err)
	}
	now = now.Add(31 * 24 * time.Hour)
	if n, err := s.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("a sweep 31 days on deleted %d (want the 2 outputs): %v", n, err)
	}
	for key, kept := range map[string]bool{"outputs/photo_k1/image-0.png": false, "outputs/photo_k2/image-0.png": false,
		"uploads/acc_1/u1.png": true, "studio/acc_1/brief": true} {
		_, err := b.Stat(ctx, key)
		if kept != (err == nil) || !kept && !errors.Is(err, blobs.ErrNotFound) {
			t.Errorf("%s: kept %v, stat %v", key, kept, err)
		}
	}
	s.Retention.Uploads = 7 * 24 * time.Hour
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("a sweep with an upload retention deleted %d: %v", n, err)
	}
	if _, err := b.Stat(ctx, "studio/acc_1/brief"); err != nil {
		t.Fatalf("a file outside outputs and uploads was swept: %v", err)
	}
}

func TestRetentionMemory(t *testing.T) { retentionSuite(t, blobs.NewMemory()) }

func TestRetentionFiles(t *testing.T) {
	b, err := blobs.OpenBucket(context.Background(), filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	retentionSuite(t, b)
}

func TestRetentionS3(t *testing.T) {
	b, err := blobs.OpenBucket(context.Background(), s3Location(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	retentionSuite(t, b)
}
