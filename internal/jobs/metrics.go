package jobs

import (
	"context"
	"time"
)

// Recorder is what the engine reports about settled jobs and the credits they moved. The
// process's metrics implement it; a Service without one (tests, tools) reports nothing.
type Recorder interface {
	JobFinished(model, outcome string, ran time.Duration)
	CreditsCharged(product string, credits int64)
	CreditsRefunded(product string, credits int64)
}

// Observe sets where settled jobs are reported. Call it before Run and before serving.
func (s *Service) Observe(r Recorder) { s.recorder = r }

// settled reports one job closed by a committed transaction: the lifecycle log line (model,
// account, how long it ran, credits kept and given back) and, with a Recorder, the series.
// It runs after the commit, so a rolled-back settlement is never counted.
func (s *Service) settled(j Job) {
	var ran time.Duration
	if j.StartedAt != nil && j.FinishedAt != nil {
		ran = j.FinishedAt.Sub(*j.StartedAt)
	}
	refunded := max(0, j.Reserved-j.Charged)
	s.log.Info("job settled", "request_id", j.RequestID, "job", j.ID, "model", j.Model, "account", j.AccountID,
		"status", string(j.Outcome), "duration_ms", ran.Milliseconds(), "credits", j.Charged, "refunded", refunded,
		"error_code", j.ErrorCode)
	if s.recorder == nil {
		return
	}
	s.recorder.JobFinished(j.Model, string(j.Outcome), ran)
	s.recorder.CreditsCharged(j.Product, j.Charged)
	s.recorder.CreditsRefunded(j.Product, refunded)
}

// Running is how many jobs this process runs now.
func (s *Service) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.slots {
		n += v
	}
	return n
}

// QueueDepth counts the jobs waiting for a slot, every model together: one read, outside any
// write transaction (a scrape must not queue behind, or hold up, the writers).
func (s *Service) QueueDepth(ctx context.Context) (int, error) {
	return s.store.CountWaiting(ctx)
}
