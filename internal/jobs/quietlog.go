package jobs

import (
	"log/slog"
	"sync"
	"time"
)

// quietWarnEvery is how often a warning that keeps repeating is written again.
const quietWarnEvery = 30 * time.Second

// quietWarn writes a warning the first time it comes, then at most once every quietWarnEvery
// while it keeps coming, with how many times it came meanwhile: a database that is down fails
// every poll of every model, and one line a while says so where hundreds a minute would drown
// every other line.
type quietWarn struct {
	mu   sync.Mutex
	seen map[string]*quietEntry
}

type quietEntry struct {
	at       time.Time // when it was last written
	repeated int       // how many times it came since, unwritten
}

func (q *quietWarn) warn(log *slog.Logger, now time.Time, msg string, args ...any) {
	q.mu.Lock()
	if q.seen == nil {
		q.seen = map[string]*quietEntry{}
	}
	e := q.seen[msg]
	if e != nil && now.Sub(e.at) < quietWarnEvery {
		e.repeated++
		q.mu.Unlock()
		return
	}
	repeated := 0
	if e != nil {
		repeated = e.repeated
	}
	q.seen[msg] = &quietEntry{at: now}
	q.mu.Unlock()
	if repeated > 0 {
		args = append(args, "repeated", repeated, "over", quietWarnEvery.String())
	}
	log.Warn(msg, args...)
}
