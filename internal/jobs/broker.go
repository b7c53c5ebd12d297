package jobs

import "sync"

// broker wakes the waiters of a request (held connections, streams) when its job changes in
// this process; waiters also poll the store, so changes made by other processes arrive too.
type broker struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newBroker() *broker { return &broker{subs: map[string]map[chan struct{}]struct{}{}} }

func (b *broker) subscribe(requestID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[requestID] == nil {
		b.subs[requestID] = map[chan struct{}]struct{}{}
	}
	b.subs[requestID][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[requestID], ch)
		if len(b.subs[requestID]) == 0 {
			delete(b.subs, requestID)
		}
		b.mu.Unlock()
	}
}

func (b *broker) publish(requestID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[requestID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
