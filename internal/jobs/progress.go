package jobs

import (
	"context"
	"time"
)

// ProgressEvery is the least time between two writes of one running job's progress and logs
// for the other processes, and from its start to the first: at most four a second per job,
// and none for a job that ends sooner (its settlement carries them).
const ProgressEvery = 250 * time.Millisecond

// progressSoon schedules a write of rj's progress and logs, then a Progressed notice, so that
// status streams and reads on other processes see them while the job runs. Processes without
// a Notifier (one process) need none: their readers overlay the running job's own.
func (s *Service) progressSoon(rj *runningJob) {
	if s.notifier == nil {
		return
	}
	rj.mu.Lock()
	if rj.flushing {
		rj.mu.Unlock()
		return
	}
	rj.flushing = true
	wait := time.Until(rj.flushedAt.Add(ProgressEvery))
	rj.mu.Unlock()
	time.AfterFunc(max(wait, 0), func() { s.flushProgress(rj) })
}

// flushProgress writes rj's progress and logs if they changed and the job still runs, and
// tells every process.
func (s *Service) flushProgress(rj *runningJob) {
	rj.mu.Lock()
	rj.flushing, rj.flushedAt = false, time.Now()
	dirty, logs, progress := rj.dirty, append([]LogLine(nil), rj.logs...), rj.progress
	rj.dirty = false
	rj.mu.Unlock()
	select {
	case <-rj.done:
		return // settled: the settlement wrote them
	default:
	}
	if !dirty {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.AppendProgress(ctx, rj.job.RequestID, logs, progress); err != nil {
		s.quiet.warn(s.log, s.now(), "store progress", "request_id", rj.job.RequestID, "err", err)
		return
	}
	s.notify(Progressed, rj.job.RequestID)
}
