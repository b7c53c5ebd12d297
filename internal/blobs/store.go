package blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	_ "gocloud.dev/blob/s3blob" // registers s3:// for OpenBucket
	"gocloud.dev/gcerrors"
)

// ErrNotFound is returned by Open, Stat and Delete for a key with no file.
var ErrNotFound = errors.New("blobs: not found")

// ErrInvalidKey is returned for a key that is empty, absolute, or climbs out with "..".
var ErrInvalidKey = errors.New("blobs: invalid key")

// Info describes one stored file.
type Info struct {
	ContentType string
	Size        int64
	ModTime     time.Time
}

// Store is the port every file-keeping backend implements. Keys are slash-separated
// relative paths such as "uploads/acc_1/abc.png" or "outputs/photo_k1/image-0.png".
type Store interface {
	// Put stores the bytes read from r under key with contentType, replacing any file
	// there, and returns what was stored.
	Put(ctx context.Context, key, contentType string, r io.Reader) (Info, error)
	// Open returns a reader of the file at key (ErrNotFound when none). Close it.
	Open(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat describes the file at key (ErrNotFound when none).
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the file at key (ErrNotFound when none).
	Delete(ctx context.Context, key string) error
}

// Bucket is the Store over a gocloud.dev blob bucket.
type Bucket struct {
	b    *blob.Bucket
	name string // bucket name of a URL-opened bucket (s3://<name>?…)
}

var _ Store = (*Bucket)(nil)

// DefaultDir is where local files live when no location is configured.
const DefaultDir = "./data/blobs"

// OpenBucket opens the store named by location:
//   - "" → local files under DefaultDir;
//   - a plain path or file:///abs/path → local files under that directory (created);
//   - s3://bucket?endpoint=https://…&region=…&use_path_style=true → S3-compatible storage
//     (credentials from the usual AWS environment/config);
//   - mem:// → in memory (tests).
func OpenBucket(ctx context.Context, location string) (*Bucket, error) {
	switch {
	case location == "":
		return OpenDir(DefaultDir)
	case strings.HasPrefix(location, "file://"):
		u, err := url.Parse(location)
		if err != nil {
			return nil, fmt.Errorf("blobs: %w", err)
		}
		return OpenDir(u.Path)
	case strings.HasPrefix(location, "mem://"):
		return NewMemory(), nil
	case strings.Contains(location, "://"):
		b, err := blob.OpenBucket(ctx, location)
		if err != nil {
			return nil, fmt.Errorf("blobs: open %s: %w", redact(location), err)
		}
		name := ""
		if u, err := url.Parse(location); err == nil {
			name = u.Host
		}
		return &Bucket{b: b, name: name}, nil
	default:
		return OpenDir(location)
	}
}

// redact drops the query of a location (it may carry secrets) for error messages.
func redact(location string) string {
	if i := strings.IndexByte(location, '?'); i >= 0 {
		return location[:i]
	}
	return location
}

// OpenDir opens local file storage rooted at dir, creating it when missing.
func OpenDir(dir string) (*Bucket, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{CreateDir: true, NoTempDir: true})
	if err != nil {
		return nil, fmt.Errorf("blobs: open %s: %w", abs, err)
	}
	return &Bucket{b: b}, nil
}

// NewMemory returns a Store kept in memory, for tests.
func NewMemory() *Bucket { return &Bucket{b: memblob.OpenBucket(nil)} }

// GoCloud exposes the underlying bucket (BucketSigner presigns through it).
func (s *Bucket) GoCloud() *blob.Bucket { return s.b }

// Close releases the bucket.
func (s *Bucket) Close() error { return s.b.Close() }

// CheckKey rejects keys that are empty, absolute, hold empty or dot segments, or
// characters outside a conservative set.
func CheckKey(key string) error {
	if key == "" || len(key) > 512 || strings.HasPrefix(key, "/") {
		return ErrInvalidKey
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return ErrInvalidKey
		}
		for _, r := range seg {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
				r == '-' || r == '_' || r == '.'
			if !ok {
				return ErrInvalidKey
			}
		}
	}
	return nil
}

// Put stores r under key.
func (s *Bucket) Put(ctx context.Context, key, contentType string, r io.Reader) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	w, err := s.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType})
	if err != nil {
		return Info{}, fmt.Errorf("blobs: put %s: %w", key, err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		_ = w.Close()
		_ = s.b.Delete(context.WithoutCancel(ctx), key)
		return Info{}, fmt.Errorf("blobs: put %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return Info{}, fmt.Errorf("blobs: put %s: %w", key, err)
	}
	return Info{ContentType: contentType, Size: n, ModTime: time.Now().UTC()}, nil
}

// Open returns a reader of key.
func (s *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := CheckKey(key); err != nil {
		return nil, Info{}, err
	}
	r, err := s.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, Info{}, wrap("open", key, err)
	}
	return r, Info{ContentType: r.ContentType(), Size: r.Size(), ModTime: r.ModTime()}, nil
}

// Stat describes key.
func (s *Bucket) Stat(ctx context.Context, key string) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	a, err := s.b.Attributes(ctx, key)
	if err != nil {
		return Info{}, wrap("stat", key, err)
	}
	return Info{ContentType: a.ContentType, Size: a.Size, ModTime: a.ModTime}, nil
}

// Delete removes key.
func (s *Bucket) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := s.b.Delete(ctx, key); err != nil {
		return wrap("delete", key, err)
	}
	return nil
}

func wrap(op, key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("blobs: %s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("blobs: %s %s: %w", op, key, err)
}

// PutBytes stores data under key.
func PutBytes(ctx context.Context, s Store, key, contentType string, data []byte) (Info, error) {
	return s.Put(ctx, key, contentType, bytes.NewReader(data))
}

// ErrTooLarge is returned by ReadAll for a file larger than its limit.
var ErrTooLarge = errors.New("blobs: file too large")

// ReadAll reads the whole file at key, refusing one larger than max bytes (max ≤ 0: no limit).
func ReadAll(ctx context.Context, s Store, key string, max int64) ([]byte, Info, error) {
	r, info, err := s.Open(ctx, key)
	if err != nil {
		return nil, Info{}, err
	}
	defer r.Close()
	if max > 0 && info.Size > max {
		return nil, info, ErrTooLarge
	}
	var src io.Reader = r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return nil, info, fmt.Errorf("blobs: read %s: %w", key, err)
	}
	if max > 0 && int64(len(data)) > max {
		return nil, info, ErrTooLarge
	}
	return data, info, nil
}
