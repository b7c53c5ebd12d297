package blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// ErrNotFound is returned by Open, Stat and Delete for a key with no file.
var ErrNotFound = errors.New("blobs: not found")

// ErrExists is returned by Create for a key that already has a file.
var ErrExists = errors.New("blobs: file exists")

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
	// Create stores r under key only when no file is there, atomically: of two
	// concurrent Creates of one key exactly one succeeds; the other gets ErrExists.
	// A Create that fails (bad body, cancelled) leaves no file behind.
	Create(ctx context.Context, key, contentType string, r io.Reader) (Info, error)
	// Open returns a reader of the file at key (ErrNotFound when none). Close it.
	Open(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat describes the file at key (ErrNotFound when none).
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the file at key (ErrNotFound when none).
	Delete(ctx context.Context, key string) error
}

// backend is one storage mechanism. Bucket checks keys before calling it, so a backend
// only ever sees keys that passed CheckKey.
type backend interface {
	put(ctx context.Context, key, contentType string, r io.Reader, exclusive bool) (Info, error)
	open(ctx context.Context, key string) (io.ReadCloser, Info, error)
	stat(ctx context.Context, key string) (Info, error)
	delete(ctx context.Context, key string) error
	// list calls fn for every file under prefix with the time it was last written.
	list(ctx context.Context, prefix string, fn func(key string, modTime time.Time)) error
	close() error
}

// Bucket is the Store over one backend: local files (Dir), S3-compatible storage (S3)
// or memory.
type Bucket struct {
	be backend
	s3 *s3Backend // set when be is S3: BucketSigner presigns through it
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
	case strings.HasPrefix(location, "s3://"):
		be, err := openS3(ctx, location)
		if err != nil {
			return nil, fmt.Errorf("blobs: open %s: %w", redact(location), err)
		}
		return &Bucket{be: be, s3: be}, nil
	case strings.Contains(location, "://"):
		return nil, fmt.Errorf("blobs: unsupported location %s: use a directory, file://, s3:// or mem://", redact(location))
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

// OpenDir opens local file storage rooted at dir, creating it (0700) when missing.
func OpenDir(dir string) (*Bucket, error) {
	be, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	return &Bucket{be: be}, nil
}

// NewMemory returns a Store kept in memory, for tests.
func NewMemory() *Bucket { return &Bucket{be: newMemBackend()} }

// Close releases the bucket.
func (s *Bucket) Close() error { return s.be.close() }

// CheckKey rejects keys that are empty, absolute, hold empty or dot-led segments
// ("..", ".tmp": the local backend keeps its own files under such names), or
// characters outside a conservative set.
func CheckKey(key string) error {
	if key == "" || len(key) > 512 || strings.HasPrefix(key, "/") {
		return ErrInvalidKey
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") {
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
	if strings.HasSuffix(key, attrsSuffix) {
		return ErrInvalidKey // the local backend's attribute files
	}
	return nil
}

// Put stores r under key.
func (s *Bucket) Put(ctx context.Context, key, contentType string, r io.Reader) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	info, err := s.be.put(ctx, key, contentType, r, false)
	if err != nil {
		return Info{}, fmt.Errorf("blobs: put %s: %w", key, err)
	}
	return info, nil
}

// Create stores r under key unless a file is already there (ErrExists).
func (s *Bucket) Create(ctx context.Context, key, contentType string, r io.Reader) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	info, err := s.be.put(ctx, key, contentType, r, true)
	if err != nil {
		return Info{}, fmt.Errorf("blobs: create %s: %w", key, err)
	}
	return info, nil
}

// Open returns a reader of key.
func (s *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := CheckKey(key); err != nil {
		return nil, Info{}, err
	}
	rc, info, err := s.be.open(ctx, key)
	if err != nil {
		return nil, Info{}, fmt.Errorf("blobs: open %s: %w", key, err)
	}
	return rc, info, nil
}

// Stat describes key.
func (s *Bucket) Stat(ctx context.Context, key string) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	info, err := s.be.stat(ctx, key)
	if err != nil {
		return Info{}, fmt.Errorf("blobs: stat %s: %w", key, err)
	}
	return info, nil
}

// Delete removes key.
func (s *Bucket) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := s.be.delete(ctx, key); err != nil {
		return fmt.Errorf("blobs: delete %s: %w", key, err)
	}
	return nil
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
