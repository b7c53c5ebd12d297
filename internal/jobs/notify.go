package jobs

import "context"

// Notices between processes. Several processes over one database are one service: a job handed
// off by a process that runs none is started by a worker of another, and a job settled on one
// process is waited for by held connections and streams on others. A Notifier carries those
// notices at once; every process still looks for what it may have missed (the sweep, a waiter's
// poll), so a lost notice costs time, never a job.

// NoticeKind says what a notice tells.
type NoticeKind string

const (
	// HandOff: a job of the model Key was handed off to the workers.
	HandOff NoticeKind = "handoff"
	// Changed: the job of request Key started or settled.
	Changed NoticeKind = "changed"
	// CancelAsked: the caller of request Key asked its run to stop.
	CancelAsked NoticeKind = "cancel"
	// Progressed: the running job of request Key wrote new progress or logs (at most every
	// ProgressEvery).
	Progressed NoticeKind = "progress"
)

// Notice is one notice.
type Notice struct {
	Kind NoticeKind
	Key  string
}

// Notifier carries notices to every process of the service, this one's included.
type Notifier interface {
	// Notify sends n soon, without waiting; a notice may be lost (a process that restarts).
	Notify(n Notice)
	// Listen calls fn with every notice until ctx ends.
	Listen(ctx context.Context, fn func(Notice)) error
}

// notify sends n when the engine has a Notifier.
func (s *Service) notify(kind NoticeKind, key string) {
	if s.notifier != nil {
		s.notifier.Notify(Notice{Kind: kind, Key: key})
	}
}

// heard acts on a notice from any process: a hand-off wakes this worker's look for queued
// jobs; a changed or progressed job wakes its waiters and streams here (they read it again);
// a cancel stops the job's run if it runs here.
func (s *Service) heard(n Notice) {
	switch n.Kind {
	case HandOff:
		if s.cfg.Runs {
			select {
			case s.handoffs <- struct{}{}:
			default:
			}
		}
	case Changed, Progressed:
		s.broker.publish(n.Key)
	case CancelAsked:
		s.signalCancel(n.Key) // the process running it stops it; the others run nothing of it
	}
}

// changed wakes the job's waiters in this process and tells the other processes.
func (s *Service) changed(requestID string) {
	s.broker.publish(requestID)
	s.notify(Changed, requestID)
}
