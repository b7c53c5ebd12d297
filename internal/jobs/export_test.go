package jobs

import "github.com/modelexec/modelexec/internal/batch"

// PauseBatcher holds the submits given to the submit batcher unwritten until Release, as if its
// Run were busy. Call it while the engine's Run is not running.
func (s *Service) PauseBatcher() batch.Pause[*pendingSubmit] { return s.submits.Hold() }
