package jobs

import (
	"context"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// State is a job's state as a person filters by it: queued and running while unsettled, then
// its outcome.
type State string

const (
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// States lists every state, in the order a job goes through them.
var States = []State{StateQueued, StateRunning, StateSucceeded, StateFailed, StateCancelled}

// StateOf is the job's state.
func StateOf(j Job) State {
	switch j.Status {
	case InQueue:
		return StateQueued
	case InProgress:
		return StateRunning
	}
	return State(j.Outcome)
}

// Columns is the (status, outcome) pair a state is stored as: one equality on each, so a
// state filter reads through one index.
func (s State) Columns() (QueueStatus, Outcome, bool) {
	switch s {
	case StateQueued:
		return InQueue, "", true
	case StateRunning:
		return InProgress, "", true
	case StateSucceeded, StateFailed, StateCancelled:
		return Completed, Outcome(s), true
	}
	return "", "", false
}

// Cursor is where a page of a search ends: the last job's creation time and id. The next page
// starts strictly after it (keyset pagination: each page costs the rows it shows, however deep).
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// Search narrows an account's job list. Zero fields do not filter.
type Search struct {
	Model string
	State State
	From  time.Time // created at or after
	To    time.Time // created before
	After *Cursor   // the previous page's last job
	Limit int
}

// Search reads a page of an account's jobs, newest first.
func (s *Service) Search(ctx context.Context, accountID string, q Search) ([]Job, error) {
	if q.Limit <= 0 || q.Limit > 200 {
		q.Limit = 50
	}
	js, err := s.store.SearchJobs(ctx, accountID, q)
	if err != nil {
		return nil, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return js, nil
}
