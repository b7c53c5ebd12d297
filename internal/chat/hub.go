package chat

import "sync"

// Hub carries the text of running language-model jobs to the requests streaming them, in
// this process. A subscriber registers before the job is submitted, so it sees every piece.
type Hub struct {
	mu   sync.Mutex
	subs map[string][]*Subscription
}

// NewHub builds an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string][]*Subscription{}} }

// Subscription is one reader of one job's text. Its queue is unbounded so a slow reader
// never stalls the model; a turn's text is bounded by its output budget.
type Subscription struct {
	hub    *Hub
	jobID  string
	mu     sync.Mutex
	queue  []string
	notify chan struct{}
}

// Subscribe starts collecting the text of jobID. Close it when done.
func (h *Hub) Subscribe(jobID string) *Subscription {
	s := &Subscription{hub: h, jobID: jobID, notify: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[jobID] = append(h.subs[jobID], s)
	h.mu.Unlock()
	return s
}

// Writer returns the function a runner writes jobID's text to, or nil when no request
// streams jobID: the runner then asks its model for the whole answer at once.
func (h *Hub) Writer(jobID string) func(string) {
	h.mu.Lock()
	_, watched := h.subs[jobID]
	h.mu.Unlock()
	if !watched {
		return nil
	}
	return func(delta string) {
		h.mu.Lock()
		subs := h.subs[jobID]
		h.mu.Unlock()
		for _, s := range subs {
			s.mu.Lock()
			s.queue = append(s.queue, delta)
			s.mu.Unlock()
			select {
			case s.notify <- struct{}{}:
			default:
			}
		}
	}
}

// Ready is signalled when text may be waiting.
func (s *Subscription) Ready() <-chan struct{} { return s.notify }

// Drain takes every piece written so far.
func (s *Subscription) Drain() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Close stops collecting.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.subs[s.jobID]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(h.subs, s.jobID)
	} else {
		h.subs[s.jobID] = list
	}
}
