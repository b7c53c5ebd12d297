package blobs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// IsFull reports whether err is storage that has no room left (ENOSPC from the local
// backend, at any depth of the chain).
func IsFull(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// probeKey is a key for one probe of WriteProbe, under probes/: a name of its own, so that
// the probes every process of a deployment runs at once (a balancer checks each surface of
// each process) never write or delete one another's file. On some S3-compatible servers a
// PUT that meets a DELETE of the same key fails.
func probeKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "probes/ready-" + hex.EncodeToString(b[:])
}

// probeData is what WriteProbe writes: one block, which a full disk cannot take even where it
// still has room for a name.
var probeData = bytes.Repeat([]byte{'.'}, 4096)

// WriteProbe is the readiness check of a store: it writes one small file and deletes it, so
// storage that cannot take writes (a full disk, a read-only mount, a bucket refusing puts)
// reads as not ready.
type WriteProbe struct{ Store Store }

// Ping writes and deletes a probe file of its own.
func (p WriteProbe) Ping(ctx context.Context) error {
	key := probeKey()
	if _, err := p.Store.Put(ctx, key, "application/octet-stream", bytes.NewReader(probeData)); err != nil {
		return fmt.Errorf("blobs: storage cannot take writes: %w", err)
	}
	if err := p.Store.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("blobs: storage cannot delete: %w", err)
	}
	return nil
}

// ReadyName names the check in /readyz's answer.
func (WriteProbe) ReadyName() string { return "storage" }

// FailWrites wraps b so that every write (Put, Create) fails with what fail returns, when it
// returns an error, as a full disk fails them; reads and deletes go through. It is the fault
// of a full disk for tests, on any backend.
func FailWrites(b *Bucket, fail func() error) *Bucket {
	return &Bucket{be: failingBackend{backend: b.be, fail: fail}, s3: b.s3}
}

type failingBackend struct {
	backend
	fail func() error
}

func (f failingBackend) put(ctx context.Context, key, contentType string, r io.Reader, exclusive bool) (Info, error) {
	if err := f.fail(); err != nil {
		_, _ = io.Copy(io.Discard, r) // the bytes arrive and find no room, as on a full disk
		return Info{}, err
	}
	return f.backend.put(ctx, key, contentType, r, exclusive)
}
