package blobs

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"
)

// memBackend keeps files in a map, for tests and mem:// locations.
type memBackend struct {
	mu    sync.Mutex
	files map[string]memFile
}

type memFile struct {
	data []byte
	info Info
}

func newMemBackend() *memBackend { return &memBackend{files: map[string]memFile{}} }

func (m *memBackend) put(ctx context.Context, key, contentType string, r io.Reader, exclusive bool) (Info, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	info := Info{ContentType: contentType, Size: int64(len(data)), ModTime: time.Now().UTC()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[key]; ok && exclusive {
		return Info{}, ErrExists
	}
	m.files[key] = memFile{data: data, info: info}
	return info, nil
}

func (m *memBackend) open(_ context.Context, key string) (io.ReadCloser, Info, error) {
	m.mu.Lock()
	f, ok := m.files[key]
	m.mu.Unlock()
	if !ok {
		return nil, Info{}, ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(f.data)), f.info, nil
}

func (m *memBackend) stat(_ context.Context, key string) (Info, error) {
	m.mu.Lock()
	f, ok := m.files[key]
	m.mu.Unlock()
	if !ok {
		return Info{}, ErrNotFound
	}
	return f.info, nil
}

func (m *memBackend) delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[key]; !ok {
		return ErrNotFound
	}
	delete(m.files, key)
	return nil
}

func (m *memBackend) close() error { return nil }
