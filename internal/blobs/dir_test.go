package blobs_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
)

// TestDirPermissions: stored files are account data, readable by the service's own user
// only: folders 0700, files (and their attribute sidecars) 0600, whatever the umask.
func TestDirPermissions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data", "blobs")
	b, err := blobs.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Put(ctx, "outputs/photo_k1/image-0.png", "image/png", strings.NewReader("png")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "uploads/acc_1/a.png", "image/png", strings.NewReader("png")); err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", strings.TrimPrefix(p, root), got, want)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 8 { // root, .tmp, 4 folders, 2 files + 2 sidecars
		t.Fatalf("walked %d entries only", checked)
	}
}

// TestDirNoPartialFiles: a write that dies mid-body leaves nothing where files live, and
// a temporary file a crashed process left behind is removed when the folder is next
// opened (a fresh one, maybe another process's write under way, is kept).
func TestDirNoPartialFiles(t *testing.T) {
	root := t.TempDir()
	b, err := blobs.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Put(ctx, "uploads/acc_1/a.png", "image/png", io.MultiReader(strings.NewReader("half"), failing{})); err == nil {
		t.Fatal("put from a failing reader succeeded")
	}
	if left := files(t, root); len(left) != 0 {
		t.Fatalf("a failed put left %v", left)
	}

	// What a kill -9 mid-write leaves: a partial file in the temporary folder.
	tmp := filepath.Join(root, ".tmp")
	stale := filepath.Join(tmp, "put-123")
	fresh := filepath.Join(tmp, "put-456")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 1000), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.OpenDir(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there after reopening: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary file (a write maybe under way) was removed: %v", err)
	}
}

// TestDirReadsEarlierLayout: a data folder written by earlier versions (content type in a
// <key>.attrs JSON sidecar) reads back with its content type.
func TestDirReadsEarlierLayout(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "outputs", "photo_k1")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "image-0.png"), []byte("png"), 0o640); err != nil {
		t.Fatal(err)
	}
	attrs := `{"user.cache_control":"","user.content_disposition":"","user.content_encoding":"","user.content_language":"","user.content_type":"image/png","user.metadata":null,"md5":"x"}`
	if err := os.WriteFile(filepath.Join(dir, "image-0.png.attrs"), []byte(attrs), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := blobs.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.Stat(context.Background(), "outputs/photo_k1/image-0.png")
	if err != nil || info.ContentType != "image/png" || info.Size != 3 {
		t.Fatalf("stat %+v %v", info, err)
	}
}

// files lists the regular files under root outside the temporary folder.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, string(filepath.Separator)+".tmp"+string(filepath.Separator)) {
			out = append(out, p)
		}
		return err
	})
	return out
}
