package jobs

import "runtime"

// BatcherPause holds the submits given to the submit batcher unwritten, as if its Run were
// busy (Service.PauseBatcher).
type BatcherPause struct{ b *batcher[*pendingSubmit] }

// PauseBatcher holds the submits until Release. Call it while the engine's Run is not running.
func (s *Service) PauseBatcher() BatcherPause {
	b := s.submits
	b.mu.Lock()
	b.running, b.writing = true, b.cfg.InFlight
	b.mu.Unlock()
	return BatcherPause{b}
}

// Await returns once n submits wait.
func (p BatcherPause) Await(n int) {
	for {
		p.b.mu.Lock()
		waiting := len(p.b.pending)
		p.b.mu.Unlock()
		if waiting >= n {
			return
		}
		runtime.Gosched() // the submits' goroutines are queueing; no outcome depends on time
	}
}

// Release writes the submits waiting, as one batch when they fit in one; later submits are
// written alone.
func (p BatcherPause) Release() {
	p.b.mu.Lock()
	p.b.running, p.b.writing = false, 0
	p.b.mu.Unlock()
	go func() {
		for batch := p.b.take(); batch != nil; batch = p.b.take() {
			p.b.write(batch)
		}
	}()
}
