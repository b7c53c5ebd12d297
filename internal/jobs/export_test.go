package jobs

import "runtime"

// TogetherPause holds the submits charged together (Config.ChargeFirst) unwritten, as if every
// batch runner were busy (Service.PauseTogether).
type TogetherPause struct{ t *together }

// PauseTogether holds the submits charged together until Release. Call it while no batch runs.
func (s *Service) PauseTogether() TogetherPause {
	t := s.together
	t.mu.Lock()
	t.running = togetherRunners
	t.mu.Unlock()
	return TogetherPause{t}
}

// Await returns once n submits wait.
func (p TogetherPause) Await(n int) {
	for {
		p.t.mu.Lock()
		waiting := len(p.t.pending)
		p.t.mu.Unlock()
		if waiting >= n {
			return
		}
		runtime.Gosched() // the submits' goroutines are queueing; no outcome depends on time
	}
}

// Release writes the submits waiting, as one batch when they fit in one.
func (p TogetherPause) Release() {
	p.t.mu.Lock()
	p.t.running = 1
	p.t.mu.Unlock()
	go p.t.serve()
}
