package webhooks

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemStore is an in-memory Store: the reference behaviour for SQL implementations, the store
// of the tests, and enough for a single process that may lose queued deliveries on restart.
type MemStore struct {
	mu         sync.Mutex
	endpoints  map[string]Endpoint
	deliveries map[string]Delivery
	hosts      *MemHostGate
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{endpoints: map[string]Endpoint{}, deliveries: map[string]Delivery{}, hosts: NewMemHostGate()}
}

func tp(t time.Time) *time.Time { return &t }

func cloneEndpoint(e Endpoint) Endpoint {
	e.Products = slices.Clone(e.Products)
	if e.Verification != nil {
		v := *e.Verification
		e.Verification = &v
	}
	return e
}

func cloneDelivery(d Delivery) Delivery {
	d.Body = slices.Clone(d.Body)
	return d
}

func (m *MemStore) CreateEndpoint(_ context.Context, p CreateEndpointParams) (Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.full(p.Account, p.MaxNotDead) {
		return Endpoint{}, ErrTooManyWebhooks
	}
	if _, ok := m.endpoints[p.ID]; ok {
		return Endpoint{}, ErrDuplicate
	}
	e := Endpoint{ID: p.ID, Account: p.Account, URL: p.URL, Products: slices.Clone(p.Products), Status: StatusPending, CreatedAt: p.Now}
	m.endpoints[e.ID] = e
	return cloneEndpoint(e), nil
}

func (m *MemStore) GetEndpoint(_ context.Context, id string) (Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endpoints[id]
	if !ok {
		return Endpoint{}, ErrNotFound
	}
	return cloneEndpoint(e), nil
}

func (m *MemStore) ListEndpoints(_ context.Context, account string) ([]Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Endpoint
	for _, e := range m.endpoints {
		if e.Account == account {
			out = append(out, cloneEndpoint(e))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// full reports whether account already has limit endpoints not dead (never when limit is 0).
func (m *MemStore) full(account string, limit int) bool {
	n := 0
	for _, e := range m.endpoints {
		if e.Account == account && e.Status != StatusDead {
			n++
		}
	}
	return limit > 0 && n >= limit
}

func (m *MemStore) RecordChallenge(_ context.Context, p RecordChallengeParams) (ChallengeRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endpoints[p.EndpointID]
	if !ok {
		return ChallengeRecord{}, ErrNotFound
	}
	var rec ChallengeRecord
	if !p.Passed {
		if p.Verification != nil {
			v := *p.Verification
			e.Verification = &v
		}
		m.endpoints[e.ID] = e
		rec.Endpoint = cloneEndpoint(e)
		return rec, nil
	}
	if e.Status == StatusDead && m.full(e.Account, p.MaxNotDead) {
		return ChallengeRecord{}, ErrTooManyWebhooks
	}
	e.Status, e.Verified, e.VerifiedAt = StatusActive, true, tp(p.Now)
	e.Verification, e.DisabledReason, e.DeadAt, e.ConsecutiveFailures = nil, "", nil, 0
	m.endpoints[e.ID] = e
	held := m.sortedLocked(func(d Delivery) bool { return d.EndpointID == e.ID && d.Status == DeliveryHeld })
	i := 0
	for _, d := range held {
		if d.CreatedAt.Before(p.RetainFrom) {
			d.Status, d.CloseReason, d.ClosedAt = DeliveryFailed, CloseHeldPastWindow, tp(p.Now)
			rec.Expired++
		} else {
			d.Status, d.NextAttemptAt = DeliveryScheduled, p.Now.Add(time.Duration(i)*p.ReleaseSpacing)
			i++
			rec.Released++
		}
		m.deliveries[d.ID] = d
	}
	rec.Endpoint = cloneEndpoint(e)
	return rec, nil
}

func (m *MemStore) sortedLocked(keep func(Delivery) bool) []Delivery {
	var out []Delivery
	for _, d := range m.deliveries {
		if keep(d) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (m *MemStore) DeleteEndpoint(_ context.Context, account, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endpoints[id]
	if !ok || e.Account != account {
		return false, nil
	}
	delete(m.endpoints, id)
	for did, d := range m.deliveries {
		if d.EndpointID == id && (d.Status == DeliveryScheduled || d.Status == DeliveryHeld) {
			delete(m.deliveries, did)
		}
	}
	return true, nil
}

func (m *MemStore) EnqueueDeliveries(_ context.Context, p EnqueueParams) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for _, n := range p.Deliveries {
		if _, ok := m.deliveries[n.ID]; ok {
			continue
		}
		status := DeliveryScheduled
		if n.EndpointID != "" {
			e, ok := m.endpoints[n.EndpointID]
			switch {
			case !ok:
				continue
			case e.Status == StatusActive:
			case e.Status == StatusDisabled:
				status = DeliveryHeld
			default:
				continue
			}
		}
		m.deliveries[n.ID] = Delivery{ID: n.ID, EndpointID: n.EndpointID, Account: n.Account, EventID: n.EventID,
			EventType: n.EventType, JobID: n.JobID, RequestID: n.RequestID, URL: n.URL, Body: slices.Clone(n.Body),
			Status: status, NextAttemptAt: p.Now, CreatedAt: p.Now}
		ids = append(ids, n.ID)
	}
	return ids, nil
}

func (m *MemStore) ClaimDue(_ context.Context, p ClaimParams) ([]Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []Delivery
	for _, d := range m.deliveries {
		if d.Status == DeliveryScheduled && !d.NextAttemptAt.After(p.Now) && (p.EndpointID == "" || d.EndpointID == p.EndpointID) &&
			(p.DeliveryID == "" || d.ID == p.DeliveryID) {
			due = append(due, d)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i], due[j]
		if !a.NextAttemptAt.Equal(b.NextAttemptAt) {
			return a.NextAttemptAt.Before(b.NextAttemptAt)
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
	per := map[string]int{}
	var out []Delivery
	for _, d := range due {
		if p.Limit > 0 && len(out) >= p.Limit {
			break
		}
		if d.EndpointID != "" && p.PerEndpoint > 0 {
			if per[d.EndpointID] >= p.PerEndpoint {
				continue
			}
			per[d.EndpointID]++
		}
		d.NextAttemptAt = p.LeaseUntil
		m.deliveries[d.ID] = d
		out = append(out, cloneDelivery(d))
	}
	return out, nil
}

func (m *MemStore) RecordAttempts(ctx context.Context, b AttemptBatch) (BatchRecorded, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := BatchRecorded{Attempts: make([]Recorded, len(b.Attempts))}
	for i, p := range b.Attempts {
		out.Attempts[i] = m.recordLocked(p)
	}
	var err error
	out.HostPausedUntil, err = m.hosts.Record(ctx, b.Now, b.Hosts)
	return out, err
}

func (m *MemStore) SweepState(_ context.Context, ids []string, now time.Time) (SweepState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := SweepState{Endpoints: map[string]Endpoint{}, Paused: m.hosts.pausedAt(now)}
	for _, id := range ids {
		if e, ok := m.endpoints[id]; ok {
			st.Endpoints[id] = cloneEndpoint(e)
		}
	}
	return st, nil
}

func (m *MemStore) recordLocked(p AttemptParams) Recorded {
	d, ok := m.deliveries[p.DeliveryID]
	if !ok {
		return Recorded{Gone: true} // deleted with its endpoint meanwhile
	}
	if p.Attempted {
		d.Attempts++
		d.LastAttemptAt = tp(p.Now)
		d.LastStatusCode = p.StatusCode
		d.LastError = p.Error
	}
	d.Status = p.Status
	switch p.Status {
	case DeliveryScheduled:
		d.NextAttemptAt = p.NextAttemptAt
	case DeliveryDelivered, DeliveryFailed:
		d.CloseReason, d.ClosedAt = p.CloseReason, tp(p.Now)
	}
	m.deliveries[d.ID] = d
	if p.EndpointID == "" || p.Effect == EffectNone {
		if e, ok := m.endpoints[p.EndpointID]; ok {
			return Recorded{Endpoint: cloneEndpoint(e)}
		}
		return Recorded{}
	}
	e, ok := m.endpoints[p.EndpointID]
	if !ok {
		return Recorded{Gone: true}
	}
	hold := ApplyEffect(&e, p)
	m.endpoints[e.ID] = e
	if hold {
		for id, o := range m.deliveries {
			if o.EndpointID == e.ID && o.Status == DeliveryScheduled {
				o.Status = DeliveryHeld
				m.deliveries[id] = o
			}
		}
	}
	return Recorded{Endpoint: cloneEndpoint(e)}
}

func (m *MemStore) ExpireOld(_ context.Context, p ExpireParams) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, d := range m.deliveries {
		if (d.Status == DeliveryScheduled || d.Status == DeliveryHeld) && d.CreatedAt.Before(p.CreatedBefore) {
			d.Status, d.CloseReason, d.ClosedAt = DeliveryFailed, CloseHeldPastWindow, tp(p.Now)
			m.deliveries[id] = d
			n++
		}
	}
	return n, nil
}

func (m *MemStore) GetDelivery(_ context.Context, id string) (Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deliveries[id]
	if !ok {
		return Delivery{}, ErrNotFound
	}
	return cloneDelivery(d), nil
}

func (m *MemStore) ListDeliveries(_ context.Context, p ListDeliveriesParams) ([]Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.sortedLocked(func(d Delivery) bool {
		return (p.EndpointID == "" || d.EndpointID == p.EndpointID) && (p.Account == "" || d.Account == p.Account) &&
			(p.JobID == "" || d.JobID == p.JobID)
	})
	for i := range out {
		out[i] = cloneDelivery(out[i])
	}
	return out, nil
}

func (m *MemStore) RecentDeliveries(_ context.Context, endpointID string, limit int) ([]Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.sortedLocked(func(d Delivery) bool { return d.EndpointID == endpointID })
	var out []Delivery
	for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, cloneDelivery(all[i]))
	}
	return out, nil
}
