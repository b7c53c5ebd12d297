package studio

import (
	"context"
	"sync"
)

// MemStore is an in-process Store for tests and single-process runs without a database.
type MemStore struct {
	mu   sync.Mutex
	docs map[Key]Stored
	gens map[Key]Lineage
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{docs: map[Key]Stored{}, gens: map[Key]Lineage{}} }

func (m *MemStore) Document(_ context.Context, k Key) (Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.docs[k]
	if !ok {
		return Stored{}, ErrNotFound
	}
	d.State = append([]byte(nil), d.State...)
	return d, nil
}

func (m *MemStore) Revision(_ context.Context, k Key) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.docs[k].Rev, nil
}

func (m *MemStore) ProjectExists(_ context.Context, account, project string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.docs {
		if k.Account == account && k.Project == project {
			return true, nil
		}
	}
	return false, nil
}

func (m *MemStore) Put(_ context.Context, p PutParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs[p.Key].Rev != p.Prev {
		return ErrRevisionMoved
	}
	m.docs[p.Key] = Stored{Rev: p.Prev + 1, State: append([]byte(nil), p.State...), UpdatedAt: p.Now}
	return nil
}

func (m *MemStore) Lineage(_ context.Context, k Key) (Lineage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.gens[k]
	l.Retired = append([]byte(nil), l.Retired...)
	return l, nil
}

func (m *MemStore) Replace(_ context.Context, p ReplaceParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs[p.Key].Rev != p.Prev {
		return ErrRevisionMoved
	}
	m.docs[p.Key] = Stored{Rev: p.Prev + 1, State: append([]byte(nil), p.State...), UpdatedAt: p.Now}
	m.gens[p.Key] = Lineage{Generation: m.gens[p.Key].Generation + 1, Retired: append([]byte(nil), p.Retired...)}
	return nil
}
