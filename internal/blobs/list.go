package blobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Each backend lists the files under a key prefix with their times, so that retention
// (Bucket.DeleteOlder) works the same on every one.

// DeleteOlder deletes every file under prefix (a folder of keys, "outputs/") last written
// before cutoff and returns how many it deleted. A file another process deleted first is not
// an error.
func (s *Bucket) DeleteOlder(ctx context.Context, prefix string, cutoff time.Time) (int, error) {
	var old []string
	err := s.be.list(ctx, prefix, func(key string, modTime time.Time) {
		if modTime.Before(cutoff) {
			old = append(old, key)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("blobs: list %s: %w", prefix, err)
	}
	n := 0
	for _, key := range old {
		if err := s.be.delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
			return n, fmt.Errorf("blobs: delete %s: %w", key, err)
		}
		n++
	}
	return n, nil
}

func (d *dirBackend) list(ctx context.Context, prefix string, fn func(key string, modTime time.Time)) error {
	root := d.path(strings.TrimSuffix(prefix, "/"))
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() || strings.HasSuffix(path, attrsSuffix) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // deleted meanwhile
		}
		rel, err := filepath.Rel(d.root, path)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), info.ModTime())
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil // nothing was ever stored under prefix
	}
	return err
}

func (m *memBackend) list(_ context.Context, prefix string, fn func(key string, modTime time.Time)) error {
	m.mu.Lock()
	keys := make([]string, 0, len(m.files))
	times := map[string]time.Time{}
	for k, f := range m.files {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
			times[k] = f.info.ModTime
		}
	}
	m.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		fn(k, times[k])
	}
	return nil
}

func (b *s3Backend) list(ctx context.Context, prefix string, fn func(key string, modTime time.Time)) error {
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			fn(aws.ToString(o.Key), aws.ToTime(o.LastModified))
		}
	}
	return nil
}
